"""What a visit to a share link is, pure: a click or a preview (an unfurler, a prefetch, a HEAD), from which
referrer host, by which visitor (a digest of the client address: one click per visitor, link and day)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HOST = 100
# Link unfurlers and crawlers that fetch a shared URL to show a card: they are not readers.
PREVIEW_AGENTS = re.compile(
    r"bot\b|bot/|crawler|spider|preview|facebookexternalhit|facebookcatalog|whatsapp/|skypeuripreview|embedly|"
    r"iframely|vkshare|mastodon/|cardyb|google-pagerenderer|headlesschrome|curl/|wget/|python-|httpx/|"
    r"go-http-client|okhttp|java/",
    re.IGNORECASE,
)
_HOST = re.compile(r"[a-z0-9.-]{1,100}")
OTHER = "(other)"  # a referrer with a host we would not store as it is


@dataclass(frozen=True, slots=True)
class Visit:
    preview: bool
    referrer_host: str  # '' when the visit named no referrer
    visitor: str  # a digest of the client address


def visit_of(method: str, user_agent: str | None, referrer: str | None, purpose: str | None,
             address: str) -> Visit:  # fmt: skip
    return Visit(is_preview(method, user_agent, purpose), referrer_host(referrer), visitor_of(address))


def is_preview(method: str, user_agent: str | None, purpose: str | None) -> bool:
    """HEAD, a browser's prefetch (`Sec-Purpose`/`Purpose: prefetch`), no User-Agent, or a known unfurler."""
    if method.upper() == "HEAD" or (purpose and "prefetch" in purpose.lower()):
        return True
    return not user_agent or PREVIEW_AGENTS.search(user_agent[:512]) is not None


def referrer_host(referrer: str | None) -> str:
    """The Referer's host, lower case, without `www.`; '' when absent, OTHER when it is not a plain host name."""
    if not referrer or not referrer.strip():
        return ""
    try:
        host = urlsplit(referrer.strip()[:2048]).hostname or ""
    except ValueError:
        return OTHER
    host = host.removeprefix("www.")
    return host if _HOST.fullmatch(host) else OTHER


def visitor_of(address: str) -> str:
    return hashlib.blake2b(address.encode(), digest_size=8).hexdigest()
