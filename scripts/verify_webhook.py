"""Verify a newsagg webhook by hand: `python scripts/verify_webhook.py SECRET 'SIGNATURE HEADER' BODY_FILE`.

Standalone on purpose (standard library only): it is what a receiver does. The signature header is
`Newsagg-Signature: t=<unix seconds>,v1=<hex>`, where hex = HMAC-SHA256(secret, "<t>." + raw body). A receiver
recomputes it over the raw bytes it received (before parsing the JSON), compares in constant time, and rejects a
timestamp more than 5 minutes from its clock (a replayed delivery). Deliveries are at least once: the `id` field
(also the `Newsagg-Delivery` header) is the same on every retry, so a receiver that saw it already answers 2xx and
does nothing. Exit status 0 when valid, 1 otherwise."""

from __future__ import annotations

import hashlib
import hmac
import sys
import time

TOLERANCE_SECONDS = 300


def valid(secret: str, header: str, body: bytes, now: float | None = None) -> bool:
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > TOLERANCE_SECONDS:
        return False
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(fields.get("v1", ""), expected)


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[3], "rb") as file:
        ok = valid(argv[1], argv[2], file.read())
    print("valid" if ok else "INVALID")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
