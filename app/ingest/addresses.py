"""Which network addresses a feed may live on: public ones only (SSRF), loopback only when allowed."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Ranges that `is_private`/`is_reserved` do not all cover on every Python version.
_EXTRA_BLOCKED = tuple(
    ipaddress.ip_network(n)
    for n in ("100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "fc00::/7", "64:ff9b::/96", "2002::/16")
)


class AddressRefused(ValueError):
    """The URL points at an address newsagg will not fetch from."""


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
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0]) for info in infos]


async def check_url_target(url: str, *, allow_loopback: bool) -> None:
    """Raise AddressRefused unless every address the URL's host resolves to may be fetched."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AddressRefused(f"only http(s) URLs are fetched: {url!r}")
    try:
        addresses = await resolve(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except (OSError, UnicodeError) as error:
        raise AddressRefused(f"cannot resolve {parts.hostname!r}: {error}") from error
    for address in addresses:
        reason = refusal_reason(address, allow_loopback=allow_loopback)
        if reason:
            raise AddressRefused(f"{parts.hostname} resolves to {address}, a {reason}")
