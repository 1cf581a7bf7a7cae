"""The crawl tick's capacity: one tick claims several full batches while the workers keep up, and no more once a
tick's worth of jobs backs up in the crawl queue, so 10,000 sources at a 15-minute interval are not held to one
batch per tick."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from arq.connections import ArqRedis
from sqlalchemy import func, select

from app.services import Services
from app.settings import Settings
from app.sources.models import ClaimStatus, CrawlSchedule
from app.sources.service import SourceRequest, create_source
from jobs.crawl import crawl_tick


async def add_due_sources(services: Services, settings: Settings, n: int) -> None:
    """`n` sources due now (on a loopback address nothing listens on: no refresh runs here)."""
    async with services.db.begin() as session:
        for k in range(n):
            await create_source(session, settings, SourceRequest(feed_url=f"http://127.0.0.1:9/feed-{k}.xml"))


async def in_flight(services: Services) -> int:
    async with services.engine.connect() as connection:
        query = select(func.count()).select_from(CrawlSchedule).where(CrawlSchedule.status == ClaimStatus.IN_FLIGHT)
        return int(await connection.scalar(query) or 0)


def tick_context(services: Services, settings: Settings, arq_redis: ArqRedis, **changes: int) -> dict[str, object]:
    tuned = dataclasses.replace(services, settings=settings.model_copy(update=changes))
    return {"services": tuned, "redis": arq_redis, "heartbeat": SimpleNamespace(worker_id=None)}


async def test_one_tick_claims_full_batches_until_one_is_not_full(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    # given 250 due sources, claims of 40 and up to 10 claims a tick (a backlog of 400 jobs would stop it)
    await add_due_sources(services, settings, 250)
    ctx = tick_context(services, settings, arq_redis, crawl_batch_size=40, crawl_batches_per_tick=10)
    # when
    claimed = await crawl_tick(ctx)
    # then every due source is claimed in one tick (six full claims and one of 10), each with its refresh job
    assert claimed == 250 == await in_flight(services)
    assert await arq_redis.zcard(settings.queue_name) == 250
    assert await crawl_tick(ctx) == 0


async def test_at_most_the_configured_claims_per_tick(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    await add_due_sources(services, settings, 250)
    ctx = tick_context(services, settings, arq_redis, crawl_batch_size=40, crawl_batches_per_tick=3)
    assert await crawl_tick(ctx) == 120 == await in_flight(services)
    assert await crawl_tick(ctx) == 40  # the workers are a tick behind now (120 jobs wait): one claim, no more


async def test_a_tick_makes_one_claim_while_jobs_back_up(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    # given 250 due sources and a tick's worth of jobs (400) waiting in the crawl queue: the workers are behind
    await add_due_sources(services, settings, 250)
    for k in range(400):
        await arq_redis.enqueue_job("understand_articles", [k], _queue_name=settings.queue_name)
    ctx = tick_context(services, settings, arq_redis, crawl_batch_size=40, crawl_batches_per_tick=10)
    # when / then: one claim, as before this capacity existed; more would only queue work nobody does
    assert await crawl_tick(ctx) == 40 == await in_flight(services)
