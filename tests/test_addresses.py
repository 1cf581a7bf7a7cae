"""SSRF: feeds are fetched from public addresses only; loopback only where allowed."""

from __future__ import annotations

import ipaddress

import pytest

from app.ingest.addresses import AddressRefused, check_url_target, refusal_reason


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
     "224.0.0.1", "240.0.0.1", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "::ffff:127.0.0.1",
     "::ffff:169.254.169.254", "192.0.0.170", "198.18.0.1"],
)  # fmt: skip
def test_non_public_addresses_are_refused(address: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address), allow_loopback=False) is not None


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address), allow_loopback=False) is None


def test_loopback_passes_only_when_allowed() -> None:
    assert refusal_reason(ipaddress.ip_address("127.0.0.1"), allow_loopback=True) is None
    assert refusal_reason(ipaddress.ip_address("::ffff:127.0.0.1"), allow_loopback=True) is None
    assert refusal_reason(ipaddress.ip_address("10.0.0.1"), allow_loopback=True) is not None


async def test_hostnames_are_checked_on_what_they_resolve_to() -> None:
    with pytest.raises(AddressRefused, match="loopback"):
        await check_url_target("http://localhost:8080/feed", allow_loopback=False)
    await check_url_target("http://localhost:8080/feed", allow_loopback=True)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "gopher://127.0.0.1/", "http:///nohost"])
async def test_only_http_urls(url: str) -> None:
    with pytest.raises(AddressRefused):
        await check_url_target(url, allow_loopback=True)
