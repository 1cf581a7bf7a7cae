"""Who is asking, for a budget: an API key, a signed-in user, or else the client's address, read through the
proxies the operator trusts and no others (a client cannot pick its own bucket with a made-up X-Forwarded-For)."""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
IPV6_PREFIX = 64  # one IPv6 subscriber holds a /64: its addresses share one bucket


def trusted_networks(entries: Sequence[str]) -> tuple[Network, ...]:
    """The operator's list of proxy addresses and CIDRs (a bare address is a network of one)."""
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


def client_address(peer: str | None, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The client as the bucket knows it. From a trusted peer, X-Forwarded-For is read from the right (the hop
    nearest to us) past every trusted proxy; the first other address is the client. An unreadable entry stops the
    walk at the proxy that wrote it."""
    current = _parse(peer)
    if current is None:
        return "unknown"
    hops = [hop.strip() for hop in (forwarded_for or "").split(",")][::-1]
    for hop in hops:
        if not any(current in network for network in trusted):
            break
        previous = _parse(hop)
        if previous is None:
            break
        current = previous
    return _bucket_form(current)


def _parse(text: str | None) -> Address | None:
    if not text:
        return None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _bucket_form(address: Address) -> str:
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False))
    return str(address)


def account_key(email: str) -> str:
    """An account as named in a log-in or sign-up (any case, any length): a fixed-size key."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]
