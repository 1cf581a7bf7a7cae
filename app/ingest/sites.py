"""The site a URL belongs to: its registrable domain by the Public Suffix List (pure).

The list ships inside the `publicsuffixlist` package and is read from it once per process (about 0.3 s); nothing is
fetched at run time. A host the list cannot place (an IP address, `localhost`, a bare public suffix) is its own site.
"""

from __future__ import annotations

import functools
import ipaddress
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList


@functools.cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()


@functools.lru_cache(maxsize=65536)
def registrable_domain(host: str) -> str:
    """`feeds.bbc.co.uk` -> `bbc.co.uk`; `alice.github.io` -> `alice.github.io` (a private suffix: each of its
    sites is its own); an IP address or an unknown name -> itself."""
    host = host.lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return _suffixes().privatesuffix(host) or host


def site_of(url: str) -> str:
    """The site of a URL (its host's registrable domain); the port is no part of it."""
    host = urlsplit(url).hostname or ""
    return registrable_domain(host)
