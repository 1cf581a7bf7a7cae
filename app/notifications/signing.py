"""Webhook signatures: HMAC-SHA256 over `timestamp.body` with the endpoint's secret, sent as
`Newsagg-Signature: t=<unix seconds>,v1=<hex digest>`. A receiver recomputes it and rejects an old timestamp
(replays); scripts/verify_webhook.py does exactly that."""

from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "Newsagg-Signature"
TOLERANCE_SECONDS = 300


def signature(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, *, now: float | None = None) -> str:
    """The header value for `body` sent now."""
    timestamp = int(time.time() if now is None else now)
    return f"t={timestamp},v1={signature(secret, timestamp, body)}"


def verify(secret: str, header: str, body: bytes, *, now: float | None = None,
           tolerance: float = TOLERANCE_SECONDS) -> bool:  # fmt: skip
    """Whether `header` signs `body` with `secret`, at a timestamp within `tolerance` seconds of now."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    return hmac.compare_digest(parts.get("v1", ""), signature(secret, timestamp, body))
