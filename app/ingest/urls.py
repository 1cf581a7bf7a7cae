"""URL normalization, so one article URL is one row however a feed spells it.

RFC 3986 normalization (case, percent-encoding, dot segments, default port, IDN hosts to punycode) is url-normalize's;
ours are the rules on top: http(s) only, no credentials, no fragment, no tracking parameters, and query parameters
in a stable order by name (the values of a repeated name keep their order, so `?tag=a&tag=b` still means the same).
url-normalize also merges empty path segments (`/a//b` is `/a/b`), as nginx and Apache do by default.
"""

from __future__ import annotations

import functools
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from url_normalize import url_normalize

DEFAULT_PORTS = {"http": 80, "https": 443}
TRACKING_PARAMS = frozenset(
    {
        "fbclid", "gclid", "dclid", "gclsrc", "msclkid", "yclid", "twclid", "igshid", "mkt_tok",
        "_hsenc", "_hsmi", "mc_cid", "mc_eid", "ocid", "cmpid", "ncid", "sr_share", "smid", "ref_src",
        "ns_mchannel", "ns_campaign", "ns_source", "ns_linkname", "ns_fee", "ito", "at_medium", "at_campaign",
    }
)  # fmt: skip
TRACKING_PREFIXES = ("utm_", "mc_", "pk_", "hsa_")
ESCAPED_AMPERSAND = "amp;"  # `&amp;ref=rss` in a feed escaped twice: the name is `ref`


class InvalidUrl(ValueError):
    """Not an absolute http(s) URL."""


def is_tracking_param(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRACKING_PARAMS or lowered.startswith(TRACKING_PREFIXES)


@functools.lru_cache(maxsize=8192)  # a feed repeats its links on every fetch; IDNA encoding of hosts is the cost
def normalize_url(url: str, base: str | None = None) -> str:
    """Absolute http(s) URL in RFC 3986 normal form, without credentials, fragment or tracking parameters."""
    try:
        parts = urlsplit(urljoin(base, url.strip()) if base else url.strip())
    except ValueError as error:  # a bracketed host left open ("https://[x.example/1"), an IPv6 literal invalid
        raise InvalidUrl(f"not a URL: {url!r}: {error}") from error
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or any(c.isspace() for c in parts.hostname):
        raise InvalidUrl(f"not an absolute http(s) URL: {url!r}")
    try:
        port = parts.port
    except ValueError as error:
        raise InvalidUrl(f"bad port in {url!r}") from error
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = host if port is None else f"{host}:{port}"  # credentials dropped
    try:
        normalized = url_normalize(urlunsplit((scheme, netloc, parts.path, parts.query, "")))
    except (UnicodeError, ValueError) as error:  # an IDN label too long or not encodable
        raise InvalidUrl(f"not a valid host in {url!r}: {error}") from error
    assert normalized is not None
    scheme, netloc, path, query, _ = urlsplit(normalized)
    return urlunsplit((scheme, netloc, path, canonical_query(query), ""))


def normalized_or_none(url: str | None, base: str | None = None) -> str | None:
    """`url` normalized (resolved against `base`), None when it is missing or no absolute http(s) URL: for a link
    that is only kept when it is usable. An empty link is None, not `base` itself."""
    if not url:
        return None
    try:
        return normalize_url(url, base)
    except InvalidUrl:
        return None


def canonical_query(query: str) -> str:
    """Tracking parameters dropped, the rest sorted by name; a name's values keep their order (a stable sort).

    Servers read parameters by name, so the order of different names says nothing, while feeds do reorder them
    between fetches; the order of one name's values can matter (lists), and is kept."""
    pairs = []
    for pair in query.split("&"):
        while pair.startswith(ESCAPED_AMPERSAND):
            pair = pair[len(ESCAPED_AMPERSAND) :]
        name = pair.partition("=")[0]
        if pair and not is_tracking_param(unquote(name)):
            pairs.append((name, pair))
    return "&".join(pair for _, pair in sorted(pairs, key=lambda named: named[0]))
