"""The shared token bucket on a real Redis, and who a caller is behind proxies."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError
from redis.asyncio import Redis

from app.ratelimit.bucket import TokenBuckets
from app.ratelimit.callers import client_address, trusted_networks
from app.services import Services
from app.settings import Settings

KEY = "newsagg:rate:test:bucket"


@pytest.fixture
def buckets(services: Services) -> TokenBuckets:
    return TokenBuckets(services.redis, timeout_s=5)


async def test_a_take_of_n_tokens_leaves_capacity_minus_n(buckets: TokenBuckets) -> None:
    first = await buckets.take(KEY, 100, 1.0, 30)
    second = await buckets.take(KEY, 100, 1.0, 70)
    assert first is not None
    assert second is not None
    assert (first.allowed, first.remaining, first.used) == (True, 70, 30)
    assert (second.allowed, second.remaining) == (True, 0)


async def test_an_empty_bucket_refuses_until_it_refills(buckets: TokenBuckets) -> None:
    assert (await buckets.take(KEY, 2, 10.0, 2)).allowed  # type: ignore[union-attr]
    refused = await buckets.take(KEY, 2, 10.0, 1)
    assert refused is not None
    assert not refused.allowed
    assert 0 < (refused.retry_after_s or 0) <= 0.1
    await asyncio.sleep((refused.retry_after_s or 0) + 0.02)
    again = await buckets.take(KEY, 2, 10.0, 1)
    assert again is not None
    assert again.allowed


async def test_a_refusal_takes_nothing(buckets: TokenBuckets) -> None:
    await buckets.take(KEY, 10, 0.001, 8)
    assert not (await buckets.take(KEY, 10, 0.001, 5)).allowed  # type: ignore[union-attr]
    after = await buckets.take(KEY, 10, 0.001, 2)
    assert after is not None
    assert (after.allowed, after.remaining) == (True, 0)


async def test_a_cost_above_the_capacity_is_never_allowed(buckets: TokenBuckets) -> None:
    verdict = await buckets.take(KEY, 10, 1.0, 11)
    assert verdict is not None
    assert (verdict.allowed, verdict.retry_after_s) == (False, None)


async def test_a_dry_run_takes_nothing(buckets: TokenBuckets) -> None:
    await buckets.take(KEY, 10, 0.001, 4)
    look = await buckets.take(KEY, 10, 0.001, 3, dry_run=True)
    assert look is not None
    assert (look.allowed, look.remaining) == (True, 6)
    assert (await buckets.take(KEY, 10, 0.001, 6)).allowed  # type: ignore[union-attr]


async def test_concurrent_takes_from_many_connections_never_overspend(services: Services) -> None:
    """Ten clients (as ten API processes would be) take 200 tokens at once from a bucket of 50: exactly 50 go."""
    assert services.settings.redis_url
    clients = [Redis.from_url(services.settings.redis_url) for _ in range(10)]
    try:
        takers = [TokenBuckets(client, timeout_s=5) for client in clients]
        verdicts = await asyncio.gather(*(takers[i % 10].take(KEY, 50, 0.0001, 1) for i in range(200)))
    finally:
        for client in clients:
            await client.aclose()
    assert sum(1 for v in verdicts if v is not None and v.allowed) == 50


async def test_the_key_expires_when_the_bucket_would_be_full(services: Services, buckets: TokenBuckets) -> None:
    await buckets.take(KEY, 100, 10.0, 50)  # full again in 5 s
    ttl = await services.redis.ttl(KEY)
    assert 5 <= ttl <= 6


async def test_the_script_is_loaded_again_when_redis_lost_it(services: Services, buckets: TokenBuckets) -> None:
    await buckets.take(KEY, 10, 1.0, 1)
    await services.redis.script_flush()
    again = await buckets.take(KEY, 10, 1.0, 1)
    assert again is not None
    assert (again.allowed, again.remaining) == (True, 8)


PROXIES = trusted_networks(["10.0.0.0/8", "192.0.2.7"])


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("203.0.113.5", "198.51.100.1", "203.0.113.5"),  # an untrusted peer's header is ignored
        ("10.1.2.3", "198.51.100.1", "198.51.100.1"),
        ("10.1.2.3", "6.6.6.6, 198.51.100.1, 10.9.9.9", "198.51.100.1"),  # the nearest untrusted hop, not the first
        ("10.1.2.3", "198.51.100.1, 192.0.2.7", "198.51.100.1"),
        ("10.1.2.3", "not-an-address", "10.1.2.3"),  # garbage: the proxy that wrote it
        ("10.1.2.3", None, "10.1.2.3"),
        ("2001:db8:1:2:3:4:5:6", None, "2001:db8:1:2::/64"),  # one IPv6 subscriber, one bucket
        ("::ffff:203.0.113.9", None, "203.0.113.9"),
        (None, "198.51.100.1", "unknown"),
    ],
)
def test_client_address(peer: str | None, forwarded: str | None, client: str) -> None:
    assert client_address(peer, forwarded, PROXIES) == client


def test_a_forwarded_chain_of_20_000_trusted_hops_still_names_the_client() -> None:
    chain = ", ".join(["198.51.100.1"] + ["10.0.0.1"] * 20_000)
    assert client_address("10.0.0.2", chain, PROXIES) == "198.51.100.1"


def test_a_trusted_proxy_that_is_not_a_network_stops_the_start() -> None:
    with pytest.raises(ValidationError, match=r"10\.0\.0\.0/33"):
        Settings(_env_file=None, rate_limit_trusted_proxies=["10.0.0.0/8", "10.0.0.0/33"])  # type: ignore[call-arg]
