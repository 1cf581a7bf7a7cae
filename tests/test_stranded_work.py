"""Work whose worker is gone is never stranded: heartbeats, claims returned at the next tick, superseded and leftover
jobs, articles swept up. (tests/test_worker_killed.py kills a real worker process.)"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from arq.connections import ArqRedis
from prometheus_client import REGISTRY
from sqlalchemy import func, insert, select, update

from app.articles import repository as articles
from app.articles.models import Article
from app.ingest.refresh_jobs import JobClaim, claim_of, follow_up_job_id, refresh_job_id
from app.ingest.scheduler import claim_due_sources
from app.queue_names import REFRESH_SOURCE
from app.services import Services
from app.settings import Settings
from app.sources.models import ClaimStatus, CrawlSchedule, FetchLog
from app.sources.repository import claim_one
from app.sources.service import SourceRequest, create_source
from app.workers.heartbeat import Heartbeat
from app.workers.models import Worker
from jobs.sweeper import sweep_job
from jobs.worker import create_worker
from tests.feeds import FeedServer, Reply, items, rss
from tests.test_worker_killed import poll


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def add_sources(services: Services, settings: Settings, server: FeedServer, n: int) -> list[int]:
    ids = []
    async with services.db.begin() as session:
        for k in range(n):
            server.routes[f"/feed-{k}.xml"] = Reply(200, rss(items(3, prefix=f"Wire{k}")),
                                                    {"Content-Type": "application/rss+xml"})  # fmt: skip
            source = await create_source(session, settings, SourceRequest(feed_url=server.url(f"/feed-{k}.xml")))
            ids.append(source.id)
    return ids


async def hold(services: Services, source_id: int, worker_id: str | None, at: datetime) -> None:
    """`source_id` in flight, claimed at `at` by `worker_id`."""
    async with services.engine.begin() as connection:
        await connection.execute(update(CrawlSchedule).where(CrawlSchedule.source_id == source_id).values(
            status=ClaimStatus.IN_FLIGHT, claimed_by=worker_id, last_triggered_at=at))  # fmt: skip


async def register(services: Services, worker_id: str, silent_for: timedelta = timedelta(0)) -> None:
    async with services.engine.begin() as connection:
        await connection.execute(insert(Worker).values(id=worker_id, host="h", pid=1,
                                                       heartbeat_at=func.now() - silent_for))  # fmt: skip


async def schedule(services: Services, source_id: int) -> CrawlSchedule:
    async with services.db() as session:
        row = await session.get(CrawlSchedule, source_id)
        assert row is not None
        return row


async def work_until(settings: Settings, arq_redis: ArqRedis, done: Callable[[], Awaitable[bool]]) -> None:
    """A real worker runs until `done()` (a queue a dead worker left a job in is never drained)."""
    worker = create_worker(settings, handle_signals=False, redis_pool=arq_redis, cron_jobs=None)
    running = asyncio.create_task(worker.main())
    try:
        await poll(done, 30)
    finally:
        running.cancel()  # its loop first: closing the worker closes the Redis pool the loop reads from
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await worker.close()


async def test_the_claims_of_a_worker_gone_return_at_the_next_tick_and_no_others(
    services: Services, settings: Settings, feed_server: FeedServer
) -> None:
    """Given claims held by a worker that stopped beating, by one never seen, by a live one and by no worker yet (an
    administrator's refresh), when the crawl tick runs, then the first two are claimed again at once; the others
    wait, as does every claim for the in-flight timeout."""
    gone, unknown, alive, api = await add_sources(services, settings, feed_server, 4)
    await register(services, "worker-gone", silent_for=timedelta(seconds=settings.worker_gone_after_seconds + 1))
    await register(services, "worker-alive")
    now = datetime.now(UTC)
    for source_id, worker_id in ((gone, "worker-gone"), (unknown, "worker-never-seen"), (alive, "worker-alive")):
        await hold(services, source_id, worker_id, now)
    async with services.db.begin() as session:
        assert await claim_one(session, api, now=now)
    before = metric("newsagg_claims_released_total", reason="worker_gone")
    async with services.db.begin() as session:
        claimed = await claim_due_sources(session, settings, claimed_by="worker-ticking")
    assert sorted(claimed) == [gone, unknown]
    assert metric("newsagg_claims_released_total", reason="worker_gone") == before + 2
    assert [(await schedule(services, s)).claimed_by for s in (gone, unknown, alive, api)] == [
        "worker-ticking", "worker-ticking", "worker-alive", None]  # fmt: skip
    later = datetime.now(UTC) + timedelta(minutes=settings.crawl_in_flight_timeout_minutes + 1)
    async with services.db.begin() as session:
        assert {alive, api} <= set(await claim_due_sources(session, settings, later, claimed_by="worker-ticking"))


async def test_a_refresh_enqueued_for_a_claim_released_since_does_nothing(
    services: Services, settings: Settings, feed_server: FeedServer, arq_redis: ArqRedis, crawl: Any
) -> None:
    """Given a source claimed again after its first claim was released, when the first claim's job runs late, then
    it fetches nothing; the current claim's job fetches, holding the claim while it runs."""
    (source_id,) = await add_sources(services, settings, feed_server, 1)
    first, second = datetime.now(UTC) - timedelta(seconds=30), datetime.now(UTC)
    await hold(services, source_id, "worker-gone", second)
    await arq_redis.enqueue_job(REFRESH_SOURCE, source_id, claimed_at=first, _queue_name=settings.queue_name)
    await crawl(tick=False)
    assert feed_server.hits.get("/feed-0.xml", 0) == 0
    assert (await schedule(services, source_id)).status == ClaimStatus.IN_FLIGHT
    await arq_redis.enqueue_job(REFRESH_SOURCE, source_id, claimed_at=second, _queue_name=settings.queue_name)
    await crawl(tick=False)
    assert feed_server.hits["/feed-0.xml"] == 1
    row = await schedule(services, source_id)
    assert row.status == ClaimStatus.PENDING
    assert row.claimed_by is not None
    assert row.claimed_by.startswith(socket.gethostname()[:80] + ":")  # the worker that ran the job


async def test_a_job_stranded_by_a_dead_worker_does_not_block_its_source(
    services: Services, settings: Settings, feed_server: FeedServer, arq_redis: ArqRedis
) -> None:
    """Given a dead worker's refresh job left in arq as a kill leaves it (queued, its in-progress marker alive for an
    hour), when the next tick claims the source again, then its new job runs at once: job ids name claims."""
    (source_id,) = await add_sources(services, settings, feed_server, 1)
    claimed_at = datetime.now(UTC) - timedelta(seconds=5)
    await hold(services, source_id, "worker-killed", claimed_at)
    stranded = refresh_job_id(source_id, claimed_at)
    await arq_redis.enqueue_job(REFRESH_SOURCE, source_id, claimed_at=claimed_at, _job_id=stranded,
                                _queue_name=settings.queue_name)  # fmt: skip
    await arq_redis.psetex(f"arq:in-progress:{stranded}", 3_610_000, b"1")
    await arq_redis.enqueue_job("crawl_tick", _queue_name=settings.queue_name)

    async def fetched() -> bool:
        async with services.engine.connect() as connection:
            return await connection.scalar(select(func.count()).select_from(FetchLog)) == 1

    await work_until(settings, arq_redis, fetched)
    assert feed_server.hits["/feed-0.xml"] == 1
    assert (await schedule(services, source_id)).status == ClaimStatus.PENDING
    assert await arq_redis.exists(f"arq:job:{stranded}")  # still there, blocking nothing


async def test_a_claim_whose_refresh_job_was_lost_returns_at_the_next_sweep_and_no_other(
    services: Services, settings: Settings, feed_server: FeedServer, arq_redis: ArqRedis
) -> None:
    """Given five claims of a live worker made a minute ago, whose jobs are: lost (Redis restarted empty), queued as
    the claim's first job, deferred as a follow-up of the claim, a stranded job of an *earlier* claim only, and an
    administrator's refresh; and a claim made a moment ago with no job yet, when the sweeper runs, then the lost one
    and the one with only an earlier claim's job return to pending, due at once; the others stay in flight."""
    lost, first, deferred, earlier, admin, fresh = await add_sources(services, settings, feed_server, 6)
    await register(services, "worker-alive")
    minute_ago, now = datetime.now(UTC) - timedelta(minutes=1), datetime.now(UTC)
    for source_id in (lost, first, deferred, earlier):
        await hold(services, source_id, "worker-alive", minute_ago)
    await hold(services, admin, None, minute_ago)
    await hold(services, fresh, "worker-alive", now)
    jobs = {
        first: refresh_job_id(first, minute_ago),
        deferred: follow_up_job_id(deferred, minute_ago),
        earlier: refresh_job_id(earlier, minute_ago - timedelta(minutes=20)),
        admin: follow_up_job_id(admin, None),
    }
    for source_id, job_id in jobs.items():
        await arq_redis.enqueue_job(REFRESH_SOURCE, source_id, _job_id=job_id, _defer_by=timedelta(minutes=5),
                                    _queue_name=settings.queue_name)  # fmt: skip
    before = metric("newsagg_claims_released_total", reason="job_lost")
    await sweep_job({"services": services, "redis": arq_redis})
    statuses = {s: (await schedule(services, s)).status for s in (lost, first, deferred, earlier, admin, fresh)}
    pending, in_flight = ClaimStatus.PENDING, ClaimStatus.IN_FLIGHT
    assert statuses == {lost: pending, first: in_flight, deferred: in_flight, earlier: pending, admin: in_flight,
                        fresh: in_flight}  # fmt: skip
    assert metric("newsagg_claims_released_total", reason="job_lost") == before + 2
    async with services.db.begin() as session:
        assert sorted(await claim_due_sources(session, settings, claimed_by="worker-alive")) == [lost, earlier]


def test_refresh_job_ids_name_their_claim_and_nothing_else_parses() -> None:
    at = datetime(2026, 11, 25, 17, 30, 1, 123456, tzinfo=UTC)
    assert claim_of(refresh_job_id(7, at)) == JobClaim(7, at)
    assert claim_of(follow_up_job_id(7, at)) == JobClaim(7, at)
    assert claim_of(follow_up_job_id(7, None)) == JobClaim(7, None)
    assert follow_up_job_id(7, at) != follow_up_job_id(7, at)
    for other in ("understand:sweep:1:2", "refresh:x:2026-11-25", "refresh:7:", "refresh:7:not-a-date", "refresh:"):
        assert claim_of(other) is None


async def stored(services: Services, n: int, *, ago: timedelta, prefix: str) -> list[int]:
    async with services.db.begin() as session:
        source = await create_source(session, services.settings, SourceRequest(feed_url=f"http://127.0.0.1:9/{prefix}"))
        rows = [articles.NewArticle(source.id, f"{prefix}-{k}", f"https://{prefix}.example.org/{k}", f"{prefix} {k}",
                                    "", None, datetime.now(UTC), k) for k in range(n)]  # fmt: skip
        inserted = await articles.insert_new(await session.connection(), rows)
        ids = [a.id for a in inserted]
        await session.execute(update(Article).where(Article.id.in_(ids)).values(crawled_at=func.now() - ago))
    return ids


async def test_the_sweeper_enqueues_articles_never_understood_once(
    services: Services, settings: Settings, arq_redis: ArqRedis, crawl: Any
) -> None:
    """Given 1,200 articles stored a minute ago whose jobs were lost and 5 stored a moment ago, when the sweeper runs
    twice, then the old ones are enqueued once (three jobs of up to 500, by id range) and the new ones are left to
    their own jobs; the jobs understand and cluster every old article."""
    lost = await stored(services, 1200, ago=timedelta(minutes=1), prefix="lost")
    fresh = await stored(services, 5, ago=timedelta(0), prefix="fresh")
    ctx: dict[str, Any] = {"services": services, "redis": arq_redis}
    before = metric("newsagg_articles_requeued_total")
    assert await sweep_job(ctx) == 1200
    assert await sweep_job(ctx) == 0  # their jobs are still queued
    assert metric("newsagg_articles_requeued_total") == before + 1200
    assert await arq_redis.zcard(settings.queue_name) == 3
    await crawl(tick=False)
    async with services.engine.connect() as connection:
        unplaced = select(Article.id).where(Article.cluster_id.is_(None) | Article.simhash.is_(None))
        assert sorted(await connection.scalars(unplaced)) == fresh
    assert len(lost) == 1200


async def test_a_heartbeat_registers_its_worker_comes_back_when_let_go_and_signs_off(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    heartbeat = Heartbeat(settings.model_copy(update={"worker_heartbeat_seconds": 3600}))
    await heartbeat.start()

    async def workers() -> list[str]:
        async with services.engine.connect() as connection:
            return list(await connection.scalars(select(Worker.id)))

    assert await workers() == [heartbeat.worker_id]
    async with services.engine.begin() as connection:
        await connection.execute(update(Worker).values(heartbeat_at=func.now() - timedelta(minutes=1)))
    before = metric("newsagg_workers_gone_total")
    await sweep_job({"services": services, "redis": arq_redis})
    assert await workers() == []
    assert metric("newsagg_workers_gone_total") == before + 1
    await heartbeat._beat(first=False)  # a worker wrongly thought gone (its loop was blocked) beats again
    assert await workers() == [heartbeat.worker_id]
    await heartbeat.stop()
    assert await workers() == []
