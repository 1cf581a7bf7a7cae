"""Which network addresses a feed may live on: public ones only (SSRF), loopback only when allowed."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
DEFAULT_PORTS = {"http": 80, "https": 443}

# Ranges that `is_private`/`is_reserved` do not all cover on every Python version.
_EXTRA_BLOCKED = tuple(
    ipaddress.ip_network(n)
    for n in ("100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "fc00::/7", "64:ff9b::/96", "2002::/16")
)


class AddressRefused(ValueError):
    """The URL points at an address newsagg will not fetch from."""


class UnusableURL(AddressRefused):
    """The URL points at no address at all: malformed (an IPv6 literal left open, a port out of range or not a
    number, a space or control character), or its host is no name a resolver takes (a label over 63 characters)."""


def url_target(url: str) -> tuple[str, int]:
    """The host and port an http(s) URL connects to, checked without DNS as the fetch will read it (urllib's split,
    httpx's parse, the resolver's IDNA encoding): UnusableURL when there is none, AddressRefused for another scheme."""
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise UnusableURL(f"not a usable URL: {_shown(url)}: {error}") from error
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise AddressRefused(f"only http(s) URLs are fetched: {_shown(url)}")
    if any(character.isspace() or not character.isprintable() for character in parts.netloc):
        raise UnusableURL(f"a host has no spaces or control characters: {_shown(url)}")  # httpx would encode them
    try:
        port = parts.port
        httpx.URL(url).host  # noqa: B018 (httpx decodes an xn-- host here, as it will when it sends)
    except (ValueError, httpx.InvalidURL) as error:  # UnicodeError (IDNA) is a ValueError
        raise UnusableURL(f"not a usable URL: {_shown(url)}: {error}") from error
    if port == 0:
        raise UnusableURL(f"port 0 is no port to connect to: {_shown(url)}")
    return checked_host(parts.hostname), port or DEFAULT_PORTS[parts.scheme]


def checked_host(host: str) -> str:
    """`host` if the resolver takes it (encoded as getaddrinfo encodes it: IDNA, labels of 1 to 63 characters),
    else UnusableURL."""
    try:
        host.encode("idna")
    except UnicodeError as error:
        raise UnusableURL(f"{_shown(host)} is no host name: {error}") from error
    return host


def _shown(text: str, limit: int = 120) -> str:
    """`text` for a message: quoted, and cut when long (a 300-character host says enough in 120)."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def refusal_reason(address: IPAddress, *, allow_loopback: bool) -> str | None:
    """Why fetching from `address` is refused, or None when it is a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return refusal_reason(address.ipv4_mapped, allow_loopback=allow_loopback)
    if address.is_loopback:
        return None if allow_loopback else "loopback address"
    checks = (
        ("unspecified", address.is_unspecified),
        ("link-local address (cloud metadata lives here)", address.is_link_local),
        ("multicast address", address.is_multicast),
        ("private address", address.is_private),
        ("reserved address", address.is_reserved),
        ("non-public range", any(address in net for net in _EXTRA_BLOCKED)),
    )
    return next((reason for reason, hit in checks if hit), None)


async def resolve(host: str, port: int) -> list[IPAddress]:
    """The addresses `host` resolves to: UnusableURL for a name no resolver takes, OSError when DNS has none."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(checked_host(host), port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0]) for info in infos]


async def check_url_target(url: str, *, allow_loopback: bool) -> None:
    """Raise AddressRefused unless every address the URL's host resolves to may be fetched; UnusableURL (an
    AddressRefused) when the URL names no address at all."""
    host, port = url_target(url)
    try:
        addresses = await resolve(host, port)
    except OSError as error:
        raise AddressRefused(f"cannot resolve {_shown(host)}: {error}") from error
    for address in addresses:
        reason = refusal_reason(address, allow_loopback=allow_loopback)
        if reason:
            raise AddressRefused(f"{host} resolves to {address}, a {reason}")
