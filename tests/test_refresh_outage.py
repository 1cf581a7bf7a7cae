"""PostgreSQL gone for ten seconds while a refresh and a hub's push of one source are both being stored, in a running
worker: both are stored once it is back (the refresh job retried, the push left at the head of its list and its job
put off, as the worker does), every article once, the source's counts the sum of both, and no lock left behind.

The worker reaches PostgreSQL through a TCP proxy that can be cut (its port refuses, its connections drop), so the
outage touches nobody else."""

from __future__ import annotations

import asyncio
import functools
import logging
import time

import pytest
from arq.connections import ArqRedis
from prometheus_client import REGISTRY
from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles.models import Article
from app.ingest.refresh_jobs import refresh_job_id
from app.queue_names import INGEST_PUSH, REFRESH_SOURCE
from app.services import Services
from app.settings import Settings
from app.sources.models import ClaimStatus
from app.websub import pushes
from app.websub.pushes import Pushed, receive
from jobs.worker import create_worker
from tests.conftest import until_drained
from tests.feeds import FeedServer, items, rss
from tests.test_ingest_outages import CutProxy
from tests.test_refresh_state import claimed_held, fetch_log, schedule_of

OUTAGE_SECONDS = 10
LOCK_WAITERS = text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'")  # fmt: skip
# locks other clients of this database hold or wait for (any open transaction holds one: its own id)
LEFT_OVER = text("""
    SELECT count(*) FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
    WHERE a.datname = current_database() AND l.pid <> pg_backend_pid()
""")
RETRIES = ("newsagg_database_unreachable_job_retries_total", "newsagg_websub_push_retries_total")


def retries() -> list[float]:
    """Jobs deferred on an unreachable PostgreSQL, and runs of a source's pushes put off."""
    return [REGISTRY.get_sample_value(name) or 0.0 for name in RETRIES]


def through(settings: Settings, proxy: CutProxy) -> Settings:
    """`settings` with PostgreSQL reached through `proxy`."""
    url = make_url(settings.database_url).set(port=proxy.port).render_as_string(hide_password=False)
    return settings.model_copy(update={"database_url": url})


async def until_waiting(engine: AsyncEngine, count: int) -> None:
    """Until `count` transactions of this database wait for a lock."""
    async with asyncio.timeout(30):
        while True:
            async with engine.connect() as connection:
                if await connection.scalar(LOCK_WAITERS) >= count:
                    return
            await asyncio.sleep(0.05)


async def until_none_left(engine: AsyncEngine) -> None:
    """Until no other client holds a transaction or a lock: those the cut dropped end once their server notices."""
    async with asyncio.timeout(30):
        while True:
            async with engine.connect() as connection:
                if not await connection.scalar(LEFT_OVER):
                    return
            await asyncio.sleep(0.1)


async def test_a_refresh_and_a_push_stored_when_postgresql_goes_away_are_both_stored_once_it_is_back(
    services: Services,
    settings: Settings,
    feed_server: FeedServer,
    arq_redis: ArqRedis,
    postgres_proxy: CutProxy,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given a worker refreshing a claimed source whose feed answers when let go, last fetched an hour ago
    source_id, asked, let_go = await claimed_held(services, settings, feed_server)
    before = await schedule_of(services, source_id)
    claimed_at = before.last_triggered_at
    assert claimed_at is not None
    await arq_redis.enqueue_job(REFRESH_SOURCE, source_id, claimed_at=claimed_at, _queue_name=settings.queue_name,
                                _job_id=refresh_job_id(source_id, claimed_at))  # fmt: skip
    own = through(settings, postgres_proxy)
    worker = create_worker(own, burst=True, handle_signals=False, redis_pool=arq_redis, cron_jobs=None)
    retried_before = retries()
    working = asyncio.create_task(until_drained(worker))
    stored_before: int | None = None
    try:
        with caplog.at_level(logging.WARNING):
            assert await asyncio.to_thread(asked.wait, 30)
            # the fetch log held by another transaction: the first store to reach it waits there, its articles
            # inserted and the source's rows locked, and the second waits for those rows
            async with services.engine.connect() as holder:
                await holder.execute(text("LOCK TABLE fetch_log IN SHARE MODE"))
                # when the hub pushes two other entries, the feed answers, and both are being stored
                await receive(services.redis, source_id, Pushed(rss(items(2, prefix="Pushed")), None),
                              most=settings.websub_pending_pushes,
                              enqueue=functools.partial(arq_redis.enqueue_job, INGEST_PUSH,
                                                        _queue_name=settings.queue_name))  # fmt: skip
                await until_waiting(services.engine, 1)
                let_go.set()
                await until_waiting(services.engine, 2)
                # PostgreSQL goes away for ten seconds under both
                await postgres_proxy.cut()
                cut_at = time.monotonic()
                await holder.rollback()
                stored_before = await articles_of(services.engine, source_id)
                await asyncio.sleep(OUTAGE_SECONDS - (time.monotonic() - cut_at))
                assert not working.done(), working  # the worker waits the outage out
                await postgres_proxy.start()

            # then the worker stores both once it is back, and ends
            async with asyncio.timeout(60):
                await working
        logged = [record.getMessage() for record in caplog.records]
    finally:
        let_go.set()
        working.cancel()
        await asyncio.wait({working}, timeout=30)  # a worker cut short still closes
    assert stored_before == 0  # the cut took both stores' writes back
    assert await articles_of(services.engine, source_id) == 5
    async with services.engine.connect() as connection:
        assert await connection.scalar(select(func.count(func.distinct(Article.external_id)))
                                       .where(Article.source_id == source_id)) == 5  # fmt: skip
    assert sorted(row.items_new for row in await fetch_log(services, source_id)) == [2, 3]
    after = await schedule_of(services, source_id)
    assert sum(after.hourly_histogram) == sum(before.hourly_histogram) + 2 + 3
    assert (after.status, after.consecutive_failures) == (ClaimStatus.PENDING, 0)
    assert await pushes.waiting(services.redis, source_id) == 0
    assert worker.jobs_failed == 0
    # and the outage was said and counted as one: the refresh job retried, the push put off
    assert any("refresh_source_job failed on PostgreSQL" in line for line in logged), logged
    assert any(f"pushes of source {source_id}: storing the oldest failed" in line for line in logged), logged
    assert all(now > then for now, then in zip(retries(), retried_before, strict=True))
    # and nothing is left open or locked on the server
    await until_none_left(services.engine)


async def articles_of(engine: AsyncEngine, source_id: int) -> int:
    async with engine.connect() as connection:
        return int(await connection.scalar(select(func.count()).where(Article.source_id == source_id)) or 0)
