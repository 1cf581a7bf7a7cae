"""URL normalization, so one article URL is one row however a feed spells it."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
TRACKING_PARAMS = frozenset(
    {
        "fbclid", "gclid", "dclid", "gclsrc", "msclkid", "yclid", "twclid", "igshid", "mkt_tok",
        "_hsenc", "_hsmi", "mc_cid", "mc_eid", "ocid", "cmpid", "ncid", "sr_share", "smid", "ref_src",
    }
)  # fmt: skip
TRACKING_PREFIXES = ("utm_", "mc_", "pk_", "hsa_")


class InvalidUrl(ValueError):
    """Not an absolute http(s) URL."""


def is_tracking_param(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRACKING_PARAMS or lowered.startswith(TRACKING_PREFIXES)


def normalize_url(url: str, base: str | None = None) -> str:
    """Absolute http(s) URL: lowercase scheme/host, no credentials, default port, fragment or tracking."""
    raw = url.strip()
    if base:
        raw = urljoin(base, raw)
    parts = urlsplit(raw)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise InvalidUrl(f"not an absolute http(s) URL: {url!r}")
    host = parts.hostname.rstrip(".")  # urlsplit lowercases hostname
    try:
        port = parts.port
    except ValueError as error:
        raise InvalidUrl(f"bad port in {url!r}") from error
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not is_tracking_param(k)])
    return urlunsplit((scheme, netloc, parts.path or "/", query, ""))
