"""The subscriber's side of WebSub (W3C Recommendation), as pure functions: discovery, signatures."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

SIGNATURE_ALGORITHMS = {"sha1": hashlib.sha1, "sha256": hashlib.sha256, "sha384": hashlib.sha384,
                        "sha512": hashlib.sha512}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Discovery:
    hub: str
    topic: str


def discover(header_links: dict[str, str], feed_links: dict[str, str], feed_url: str) -> Discovery | None:
    """The hub and topic a publisher advertises: HTTP Link headers first, then the feed's own links."""
    hub = header_links.get("hub") or feed_links.get("hub")
    if not hub:
        return None
    return Discovery(hub=hub, topic=header_links.get("self") or feed_links.get("self") or feed_url)


def signature_matches(secret: str, body: bytes, header: str | None) -> bool:
    """X-Hub-Signature: `<algorithm>=<hex HMAC of the body with the subscription's secret>`."""
    if not header or "=" not in header:
        return False
    algorithm, _, digest = header.partition("=")
    method = SIGNATURE_ALGORITHMS.get(algorithm.strip().lower())
    if method is None:
        return False
    expected = hmac.new(secret.encode(), body, method).hexdigest()
    return hmac.compare_digest(expected, digest.strip().lower())
