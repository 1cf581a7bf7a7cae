"""Claims whose refresh job was lost, under input sized to hurt and with Redis or PostgreSQL gone: the sweeper never
reads an unreachable queue as an empty one (that would send every source in flight to be fetched twice)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from arq.connections import ArqRedis
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy.exc import DBAPIError, InterfaceError
from sqlalchemy.ext.asyncio import create_async_engine

from app.ingest.refresh_jobs import claim_of, refresh_job_id
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from app.sources.models import ClaimStatus
from app.workers.sweep import release_jobless_claims
from tests.feeds import FeedServer
from tests.test_stranded_work import add_sources, hold, register, schedule


async def test_a_queue_of_fifty_thousand_hostile_job_ids_costs_one_read_and_releases_only_the_lost_claim(
    services: Services, settings: Settings, feed_server: FeedServer, arq_redis: ArqRedis
) -> None:
    """Given 50,000 queue members named like refresh jobs but malformed (5,000-digit and Unicode source ids, dates
    that are not dates, 10 kB ids) beside one claim's real job, when the sweeper reads the queue, then it parses
    every member without failing and releases the claim with no job, not the one whose job is among the junk."""
    lost, queued = await add_sources(services, settings, feed_server, 2)
    await register(services, "worker-alive")
    minute_ago = datetime.now(UTC) - timedelta(minutes=1)
    for source_id in (lost, queued):
        await hold(services, source_id, "worker-alive", minute_ago)
    junk = [
        "refresh:" + "9" * 5000 + ":2026-11-25",
        "refresh:²:2026-11-25",
        "refresh:1:" + "x" * 10_000,
        f"refresh:{lost}:not-a-date",
        f"refresh:{lost}:",
        "refresh::",
        "refresh:-1:2026-11-25T00:00:00",
    ]
    members = {f"{junk[k % len(junk)]}/{k}": float(k) for k in range(50_000)}
    members[refresh_job_id(queued, minute_ago)] = 0.0
    await arq_redis.zadd(settings.queue_name, members)
    assert [claim_of(j) for j in junk] == [None] * len(junk)
    assert await release_jobless_claims(services.engine, arq_redis, settings) == 1
    assert [(await schedule(services, s)).status for s in (lost, queued)] == [
        ClaimStatus.PENDING,
        ClaimStatus.IN_FLIGHT,
    ]


async def test_with_redis_gone_the_sweeper_releases_nothing_and_with_it_back_it_releases_the_lost_claim(
    services: Services, settings: Settings, feed_server: FeedServer, arq_redis: ArqRedis
) -> None:
    """Given a claim whose job is queued, when Redis cannot be reached, then the sweep fails (the job is retried at
    its next period) and the claim stays in flight: an unreachable queue is not an empty one. When Redis answers
    again and the job is gone with it, the claim returns."""
    (source_id,) = await add_sources(services, settings, feed_server, 1)
    await register(services, "worker-alive")
    minute_ago = datetime.now(UTC) - timedelta(minutes=1)
    await hold(services, source_id, "worker-alive", minute_ago)
    gone = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=1)
    with pytest.raises(RedisConnectionError):
        await release_jobless_claims(services.engine, gone, settings)
    await gone.aclose()
    assert (await schedule(services, source_id)).status == ClaimStatus.IN_FLIGHT
    assert await release_jobless_claims(services.engine, arq_redis, settings) == 1  # back, and empty
    assert (await schedule(services, source_id)).status == ClaimStatus.PENDING


async def test_with_postgresql_gone_the_sweeper_fails_without_touching_the_queue(
    services: Services, settings: Settings, feed_server: FeedServer, arq_redis: ArqRedis
) -> None:
    """Given a lost claim, when PostgreSQL cannot be reached, then the sweep fails and changes nothing; when it is
    reachable again, the claim returns."""
    (source_id,) = await add_sources(services, settings, feed_server, 1)
    await register(services, "worker-alive")
    await hold(services, source_id, "worker-alive", datetime.now(UTC) - timedelta(minutes=1))
    gone = create_async_engine(f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/none",
                               connect_args={"timeout": 2})  # fmt: skip
    with pytest.raises((OSError, DBAPIError, InterfaceError)):
        await release_jobless_claims(gone, arq_redis, settings)
    await gone.dispose()
    assert (await schedule(services, source_id)).status == ClaimStatus.IN_FLIGHT
    assert await release_jobless_claims(services.engine, arq_redis, settings) == 1
