"""A worker killed with SIGKILL in the middle of an ingest strands nothing: another worker, started after it, finds its
claimed sources and the articles it stored but never understood, and finishes them within a minute."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.articles.models import Article
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from app.sources.models import ClaimStatus, CrawlSchedule, FetchLog
from app.sources.service import SourceRequest, create_source
from tests.feeds import FeedServer, Reply, answer, items, rss
from tests.processes import Samples, deployment_env, running, scrape, value
from tests.test_metrics import drop_recent_indexes

FAST, SLOW, PER_FEED = 8, 4, 40
HOLD = 424242  # the advisory lock that holds every understanding of the killed worker at its write


@contextlib.asynccontextmanager
async def understanding_held(services: Services) -> AsyncIterator[AsyncConnection]:
    """While inside, any transaction that writes articles' fingerprints waits at its write (a trigger asks for a lock
    this connection holds): the articles it read stay stored but not understood, for as long as the test likes."""
    async with services.engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(
            text(
                f"CREATE FUNCTION hold_understanding() RETURNS trigger LANGUAGE plpgsql AS "
                f"$$ BEGIN PERFORM pg_advisory_xact_lock_shared({HOLD}); RETURN NULL; END $$"
            )
        )
        await connection.execute(
            text(
                "CREATE TRIGGER hold_understanding BEFORE UPDATE OF simhash ON articles "
                "FOR EACH STATEMENT EXECUTE FUNCTION hold_understanding()"
            )
        )
        await connection.execute(text(f"SELECT pg_advisory_lock({HOLD})"))
        try:
            yield connection
        finally:
            await connection.execute(text(f"SELECT pg_advisory_unlock({HOLD})"))
            await connection.execute(text("DROP TRIGGER hold_understanding ON articles"))
            await connection.execute(text("DROP FUNCTION hold_understanding()"))


def feeds(server: FeedServer, answered: threading.Event) -> list[str]:
    """Fast feeds answer at once; slow ones only once `answered` is set (until then, their fetches hang)."""
    for k in range(FAST):
        body = rss(items(PER_FEED, prefix=f"Desk{k}", site=f"https://desk{k}.example.org"))
        server.routes[f"/fast-{k}.xml"] = Reply(200, body, {"Content-Type": "application/rss+xml"})
    for k in range(SLOW):
        body = rss(items(10, prefix=f"Late{k}", site=f"https://late{k}.example.org"))

        def slow(handler: BaseHTTPRequestHandler, body: bytes = body) -> None:
            answered.wait(120)
            answer(handler, body)  # the killed worker's connection may be gone

        server.routes[f"/slow-{k}.xml"] = slow
    return [server.url(f"/fast-{k}.xml") for k in range(FAST)] + [server.url(f"/slow-{k}.xml") for k in range(SLOW)]


async def count(services: Services, query: object) -> int:
    async with services.engine.connect() as connection:
        return int(await connection.scalar(query) or 0)  # type: ignore[call-overload]


async def poll(condition: Callable[[], Awaitable[bool]], seconds: float) -> None:
    """Until `condition()` holds; another process (or task) does the work, so there is nothing to await."""
    async with asyncio.timeout(seconds):
        while True:
            if await condition():
                return
            await asyncio.sleep(0.1)


async def test_a_worker_killed_mid_ingest_strands_nothing(
    services: Services, settings: Settings, feed_server: FeedServer, tmp_path: Path
) -> None:
    """Given 12 sources and a worker that has stored the fast feeds' 320 articles (their understanding held at its
    write) while fetching the 4 slow ones, when the worker is killed with SIGKILL and another started, then within
    a minute every article has its fingerprint and story and every source it held is crawled again."""
    answered = threading.Event()
    async with services.db.begin() as session:
        for url in feeds(feed_server, answered):
            await create_source(session, settings, SourceRequest(feed_url=url))
    port = free_port()
    env = deployment_env(settings, tmp_path / "home", NEWSAGG_FETCH_TIMEOUT_SECONDS="120")
    stored = select(func.count()).select_from(Article)
    not_understood = stored.where(Article.simhash.is_(None))
    held_jobs = text(f"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = {HOLD} AND NOT granted")
    in_flight = select(CrawlSchedule.source_id).where(CrawlSchedule.status == ClaimStatus.IN_FLIGHT)
    try:
        async with understanding_held(services):
            with running(env, "worker", log=tmp_path / "killed.log") as killed:

                async def mid_ingest() -> bool:
                    """The slow feeds mid-fetch, and each fast feed's understanding job held at its write."""
                    slow_fetches = sum(feed_server.hits.get(f"/slow-{k}.xml", 0) for k in range(SLOW))
                    return slow_fetches == SLOW and await count(services, held_jobs) == FAST

                await poll(mid_ingest, 60)
                held = sorted(await _scalars(services, in_flight))
                killed.process.kill()
                killed.process.wait(10)
                killed_at = time.monotonic()
        answered.set()
        assert len(held) == SLOW
        assert await count(services, not_understood) == FAST * PER_FEED
        queue = env["NEWSAGG_QUEUE_NAME"]
        left = [key async for key in services.redis.scan_iter("arq:in-progress:*")
                if await services.redis.zscore(queue, key.removeprefix(b"arq:in-progress:")) is not None]  # fmt: skip
        assert len(left) >= SLOW + FAST  # queued jobs marked running for an hour, by a worker that is no more
        with running(env | {"NEWSAGG_WORKER_METRICS_ADDRESS": f"127.0.0.1:{port}"}, "worker",
                     log=tmp_path / "after.log"):  # fmt: skip

            async def all_done() -> bool:
                crawled = select(func.count(func.distinct(FetchLog.source_id))).where(FetchLog.source_id.in_(held))
                unplaced = stored.where(Article.cluster_id.is_(None) | Article.simhash.is_(None))
                return (
                    await count(services, crawled) == SLOW
                    and await count(services, stored) == FAST * PER_FEED + SLOW * 10
                    and await count(services, unplaced) == 0
                )

            await poll(all_done, 60 - (time.monotonic() - killed_at))
            recovered_in = time.monotonic() - killed_at
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                samples: Samples = await scrape(http)
    finally:
        answered.set()
        await drop_recent_indexes(services)
    released = value(samples, "newsagg_claims_released_total", reason="worker_gone")
    requeued = value(samples, "newsagg_articles_requeued_total")
    print(f"\nkill -9 mid-ingest: {FAST * PER_FEED} articles stored not understood, {SLOW} sources in flight; "
          f"recovered in {recovered_in:.1f} s: {released:.0f} claims released (worker gone), {requeued:.0f} articles "
          f"enqueued again")  # fmt: skip
    assert released == SLOW
    assert requeued >= FAST * PER_FEED


async def _scalars(services: Services, query: object) -> list[int]:
    async with services.engine.connect() as connection:
        return list(await connection.scalars(query))  # type: ignore[call-overload]
