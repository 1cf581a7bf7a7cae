"""The newer ingest parts with Redis, then PostgreSQL, gone for ten seconds while they work: the article page queue
(jobs queued and in flight) and the crawl priority job in a running worker, a site's slot lease held when Redis
vanishes, and `newsagg replay` losing its database mid-run. Nothing is lost, nothing crashes, the logs and metrics
say what happened, and the work goes on once the server is back.

Each test runs servers of its own (or a TCP proxy that can be cut), so stopping them touches nobody else."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from subprocess import PIPE

import httpx
import pytest
import redis.asyncio
from arq.worker import Retry
from prometheus_client import REGISTRY
from redis.exceptions import RedisError
from sqlalchemy import TextClause, text, update
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db.engine import session_factory
from app.db.migrate import upgrade
from app.ingest.fetch import FetchPolicy, fetch_feed
from app.ingest.politeness import Politeness
from app.ingest.refresh import ingest_body
from app.ingest.transport import guarded_transport
from app.runtime.embedded import EmbeddedPostgres, EmbeddedRedis
from app.services import Services
from app.settings import Settings
from app.sources.models import CrawlSchedule
from app.sources.service import SourceRequest, create_source
from jobs.crawl import crawl_priority_job
from jobs.loop import lost_server, retried_on_redis
from tests.conftest import REPO
from tests.feeds import FeedServer, Item, Reply, rss
from tests.newsroom import StorySpec, add_story
from tests.pages import article_page
from tests.processes import deployment_env, running

OUTAGE_SECONDS = 10


class CutProxy:
    """A TCP forwarder to 127.0.0.1:`port` that can be cut (its port refuses, its connections drop: the server has
    vanished for its clients) and restored on the same port, while the server behind it keeps its state."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._forward, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        await self._server.wait_closed()

    async def _forward(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        self._writers.add(client_out)  # from its accept: a cut while it connects onwards drops it too
        try:
            server_in, server_out = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            client_out.transport.abort()
            return
        if client_out not in self._writers:  # cut meanwhile: kept, it would outlive the cut and hold its wait_closed
            server_out.transport.abort()
            return
        self._writers.add(server_out)
        await asyncio.gather(self._pipe(client_in, server_out), self._pipe(server_in, client_out))

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        sink.transport.abort()
        self._writers.discard(sink)


@contextlib.asynccontextmanager
async def own_postgres() -> AsyncIterator[EmbeddedPostgres]:
    """A migrated PostgreSQL of the test's own. Its folder is not under pytest's tmp_path: run as root, PostgreSQL runs
    as a user of its own that needs to traverse the folders above, and any other pytest session starting on the
    machine resets /tmp/pytest-of-root to 0700, which made the server PANIC at its next checkpoint."""
    with tempfile.TemporaryDirectory(prefix="newsagg-outage-pg-") as folder:
        os.chmod(folder, 0o711)
        server = EmbeddedPostgres(Path(folder))
        server.start()
        try:
            engine = create_async_engine(server.url())
            await upgrade(engine)
            await engine.dispose()
            yield server
        finally:
            server.stop()


async def scalar(engine: AsyncEngine, query: TextClause) -> int:
    async with engine.connect() as connection:
        return int(await connection.scalar(query) or 0)


async def until(engine: AsyncEngine, query: TextClause, done: Callable[[int], bool], seconds: float = 90) -> int:
    """Polls `query` until `done` holds (another process does the work); fails clearly after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(SQLAlchemyError, OSError):  # the server may still be starting
            if done(found := await scalar(engine, query)):
                return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {seconds:.0f} s: {query}")


PAGES = 60
TEXTS = text("SELECT count(*) FROM article_texts WHERE error_class IS NULL AND text <> ''")
SOUGHT = text("SELECT count(*) FROM article_texts")
RAISED = text(
    "SELECT count(*) FROM crawl_schedule JOIN sources ON sources.id = source_id "
    "WHERE priority > 0 AND feed_url LIKE '%/desk'"
)  # the breaking story's outlet


def slow_pages(server: FeedServer, n: int) -> str:
    """A summary-only feed of `n` entries whose pages each take a moment to answer (so fetches are in flight when a
    server goes away); the feed's URL."""
    entries = [Item(title=f"Harbour story {k}", link=server.url(f"/news/{k}"), guid=f"h-{k}",
                    summary="Council votes on the harbour wall.") for k in range(n)]  # fmt: skip
    server.routes["/feed.xml"] = Reply(200, rss(entries), {"Content-Type": "application/rss+xml"})
    for k in range(n):

        def page(handler: BaseHTTPRequestHandler, k: int = k) -> Reply:
            time.sleep(0.5)
            return Reply(200, article_page(f"Harbour story {k}"), {"Content-Type": "text/html"})

        server.routes[f"/news/{k}"] = page
    return server.url("/feed.xml")


async def test_a_worker_fetches_every_page_and_raises_priority_across_a_redis_then_a_postgresql_outage(
    settings: Settings, feed_server: FeedServer, tmp_path: Path
) -> None:
    """Given a worker fetching 60 article pages (4 at a time, half a second each) and raising the sources of a
    breaking story every 2 s, when Redis stops for 10 s (losing the article queue: it keeps nothing on disk), then
    PostgreSQL stops for 10 s, then every page is fetched and stored once, the priority job raises again after
    each, the worker never exits, and its log says what was lost and enqueued again."""
    redis_server = EmbeddedRedis(tmp_path / "redis")
    redis_server.start()
    try:
        async with own_postgres() as pg:
            own = settings.model_copy(update={"database_url": pg.url(), "redis_url": redis_server.url()})
            engine = create_async_engine(pg.url())
            opened = Services.open(own)
            try:
                async with session_factory(engine).begin() as session:
                    pages = slow_pages(feed_server, PAGES)
                    await create_source(session, own, SourceRequest(feed_url=pages))  # pages fetched: the default
                    desk = await create_source(session, own, SourceRequest(feed_url="http://127.0.0.1:9/desk"))
                    desk.article_text = False  # its story is made by the test, it has no pages
                await add_story(opened, StorySpec("Quake hits the coast", [desk.id], breaking=True))
                env = deployment_env(own, tmp_path / "home", NEWSAGG_CRAWL_TICK_SECONDS="1",
                                     NEWSAGG_SWEEP_SECONDS="2", NEWSAGG_ARTICLE_SWEEP_SECONDS="2",
                                     NEWSAGG_SWEEP_GRACE_SECONDS="3",
                                     NEWSAGG_CRAWL_PRIORITY_EVERY_SECONDS="2",
                                     NEWSAGG_ARTICLE_QUEUE_NAME="newsagg-outage-articles")  # fmt: skip
                with running(env, "worker", log=tmp_path / "worker.log") as worker:
                    # given pages being fetched and the breaking story's source raised
                    before = await until(engine, TEXTS, lambda n: n >= 5)
                    await until(engine, RAISED, lambda n: n == 1)

                    # when Redis stops for ten seconds: its queue of page jobs is gone with it
                    redis_server.stop()
                    await asyncio.sleep(OUTAGE_SECONDS / 2)
                    async with engine.begin() as connection:  # the priority job without Redis: breaking still raised
                        await connection.execute(update(CrawlSchedule).values(priority=0))
                    assert await crawl_priority_job({"services": opened}) == {"breaking": 1, "trending": 0}
                    await asyncio.sleep(OUTAGE_SECONDS / 2)
                    assert worker.process.poll() is None, worker.log.read_text()
                    assert await scalar(engine, TEXTS) < PAGES, "the outage came too late to matter"
                    redis_server.start()

                    # then the sweep enqueues the lost page jobs again, and the worker's priority job runs again
                    after_redis = await until(engine, TEXTS, lambda n: n > max(before, 5) + 2)
                    async with engine.begin() as connection:
                        await connection.execute(update(CrawlSchedule).values(priority=0))
                    await until(engine, RAISED, lambda n: n == 1)

                    # when PostgreSQL stops for ten seconds under page jobs in flight
                    assert after_redis < PAGES, "the second outage came too late to matter"
                    await engine.dispose()
                    await opened.engine.dispose()
                    pg.stop()
                    with pytest.raises((SQLAlchemyError, OSError)):
                        await crawl_priority_job({"services": opened})  # a failed run of the cron: arq logs it
                    await asyncio.sleep(OUTAGE_SECONDS)
                    assert worker.process.poll() is None, worker.log.read_text()
                    pg.start()

                    # then every page is fetched and stored, once, and priority is raised again
                    assert await until(engine, TEXTS, lambda n: n == PAGES) == PAGES
                    assert await scalar(engine, SOUGHT) == PAGES
                    async with engine.begin() as connection:
                        await connection.execute(update(CrawlSchedule).values(priority=0))
                    await until(engine, RAISED, lambda n: n == 1)
                    assert worker.process.poll() is None, worker.log.read_text()
                    log = worker.log.read_text()
                assert "restarting the loop" in log
                assert re.search(r"sweep: \d+ articles whose page job was lost have it enqueued again", log), log
                print(
                    f"\npages: {before} stored before the Redis outage, {after_redis} before the PostgreSQL one, "
                    f"all {PAGES} after; {feed_server.hits.get('/news/0', 0)} fetch(es) of the first page"
                )
            finally:
                await opened.close()
                await engine.dispose()
    finally:
        redis_server.stop()


async def test_a_slot_held_when_redis_vanishes_keeps_its_fetch_and_frees_the_site_after_its_lease(
    settings: Settings, feed_server: FeedServer, tmp_path: Path
) -> None:
    """Given a site allowed one request at a time and a page fetch holding its slot, when Redis vanishes for 10 s
    (its port refuses, its connections drop) while the page is still being read, then that fetch returns its page,
    no request goes to the site meanwhile (politeness fails closed), and once Redis is back with the orphaned lease
    the site is admitted again as soon as that lease expires: never blocked for good."""
    released = threading.Event()

    def slow(handler: BaseHTTPRequestHandler) -> Reply:
        released.wait(60)
        return Reply(200, b"<html><body>the page</body></html>", {"Content-Type": "text/html"})

    feed_server.routes["/slow"], feed_server.routes["/next"] = slow, Reply(200, b"next")
    server = EmbeddedRedis(tmp_path / "redis")
    server.start()
    proxy = CutProxy(server.port)
    await proxy.start()
    lease_s = OUTAGE_SECONDS + 5  # outlives the outage: the lease is still there when Redis returns
    own = settings.model_copy(update={"politeness_concurrent_per_site": 1, "politeness_slot_lease_seconds": lease_s})
    client = redis.asyncio.Redis(host="127.0.0.1", port=proxy.port)
    direct = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
    degraded_before = REGISTRY.get_sample_value("newsagg_redis_degraded_total", {"part": "politeness"}) or 0.0
    try:
        async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits()),
                                     timeout=90) as http:  # fmt: skip
            politeness = Politeness(client, http, own)
            url = feed_server.url("/slow")
            fetching = asyncio.create_task(politeness.fetch_within_site(
                url, lambda: fetch_feed(http, url, FetchPolicy(1024 * 1024, 1))))  # fmt: skip
            async with asyncio.timeout(30):
                while not await direct.zcard("newsagg:slots:127.0.0.1"):  # noqa: ASYNC110 (a server's state)
                    await asyncio.sleep(0.05)

            # when Redis vanishes while the page is being read
            await proxy.cut()
            released.set()
            page = await fetching
            assert page is not None
            assert page.body == b"<html><body>the page</body></html>"  # the fetch keeps its result
            with pytest.raises((RedisError, OSError)):  # fails closed: no slot, no request
                await politeness.fetch_within_site(feed_server.url("/next"), lambda: fetch_feed(
                    http, feed_server.url("/next"), FetchPolicy(1024, 1)))  # fmt: skip
            await asyncio.sleep(OUTAGE_SECONDS)
            hits_during = feed_server.hits.get("/next", 0)

            # then Redis is back with the lease nobody will return: the site waits for it to expire, no longer
            await proxy.start()
            assert await direct.zcard("newsagg:slots:127.0.0.1") == 1
            refused, admitted = 0, None
            async with asyncio.timeout(lease_s + 30):
                while admitted is None:
                    admitted = await politeness.fetch_within_site(feed_server.url("/next"), lambda: fetch_feed(
                        http, feed_server.url("/next"), FetchPolicy(1024, 1)))  # fmt: skip
                    refused += admitted is None
                    await asyncio.sleep(0.5)
            assert admitted.body == b"next"
    finally:
        released.set()
        await client.aclose()
        await direct.aclose()
        await proxy.cut()
        server.stop()
    assert hits_during == 0
    assert refused > 0  # the orphaned lease held the site until it expired
    assert (REGISTRY.get_sample_value("newsagg_redis_degraded_total", {"part": "politeness"}) or 0) > degraded_before


REPLAYED_FETCHES, PER_FETCH = 300, 20


async def run_cli(command: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """A command run to its end without blocking the loop (the proxy it goes through runs in it)."""
    process = await asyncio.create_subprocess_exec(*command, cwd=REPO, env=env, stdout=PIPE, stderr=PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 300)
    return int(process.returncode or 0), out.decode(), err.decode()


def new_articles(summary: str) -> int:
    found = re.search(r"new articles\s+([\d,]+)", summary)
    assert found is not None, summary
    return int(found.group(1).replace(",", ""))


ARTICLES = text("SELECT count(*) FROM articles")


async def test_replay_that_loses_postgresql_mid_run_says_so_and_a_second_run_finishes_it(
    settings: Settings, tmp_path: Path
) -> None:
    """Given 300 archived pushes of a source (6,000 entries) whose articles were deleted since, when PostgreSQL
    vanishes while `newsagg replay` stores them, then it exits 1 with a clear message (how far it got, re-run it)
    and no traceback; run again, it stores exactly the rest; a third run stores nothing."""
    async with own_postgres() as pg:
        own = settings.model_copy(update={"database_url": pg.url(), "fetch_archive_per_source_per_hour": 0})
        engine = create_async_engine(pg.url())
        proxy = CutProxy(pg.port)
        await proxy.start()
        try:
            async with session_factory(engine).begin() as session:
                source = await create_source(session, own, SourceRequest(feed_url="http://127.0.0.1:9/wire"))
            for k in range(REPLAYED_FETCHES):
                entries = [Item(title=f"Wire {k}-{j}", link=f"https://wire.example/{k}/{j}", guid=f"w-{k}-{j}",
                                summary=f"Report {k} {j}.") for j in range(PER_FETCH)]  # fmt: skip
                await ingest_body(engine, own, source.id, rss(entries), "application/rss+xml")
            async with engine.begin() as connection:
                await connection.execute(text("DELETE FROM articles"))
            since = (datetime.now(UTC) - timedelta(days=1)).isoformat()
            through = pg.url().replace(f":{pg.port}/", f":{proxy.port}/")
            command = [sys.executable, "-m", "app", "replay", "--source", str(source.id), "--since", since]
            env = {**{k: v for k, v in os.environ.items() if not k.startswith("NEWSAGG_")}, "DATABASE_URL": through,
                   "NEWSAGG_HOME": str(tmp_path / "home")}  # fmt: skip

            # when the database vanishes mid-replay
            replaying = await asyncio.create_subprocess_exec(*command, cwd=REPO, env=env, stdout=PIPE, stderr=PIPE)
            stored_before_cut = await until(engine, ARTICLES, lambda n: n > 0, seconds=120)
            await proxy.cut()
            out, err = (part.decode() for part in await asyncio.wait_for(replaying.communicate(), 120))
            stored = await scalar(engine, ARTICLES)
            assert stored < REPLAYED_FETCHES * PER_FETCH, "the replay ended before the database went away"
            assert replaying.returncode == 1, (out, err)
            assert "Traceback" not in err, err
            assert "the database went away after" in err, err
            assert "run the same command again" in err, err
            assert new_articles(err) <= stored  # what it says it stored was (the fetch in progress may have committed)

            # then a second run stores the rest, and a third nothing
            await proxy.start()
            code, out, err = await run_cli(command, env)
            assert code == 0, err
            assert await scalar(engine, ARTICLES) == REPLAYED_FETCHES * PER_FETCH
            new = new_articles(out)
            assert new == REPLAYED_FETCHES * PER_FETCH - stored
            code, out, err = await run_cli(command, env)
            assert code == 0, err
            assert new_articles(out) == 0
        finally:
            await proxy.cut()
            await engine.dispose()
    print(
        f"\nreplay: {stored_before_cut}+ articles stored when PostgreSQL vanished, {stored} in all by then; the "
        f"second run stored the other {new}"
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens there once the probe is closed


async def failure_of(work: Callable[[], Awaitable[object]]) -> BaseException:
    try:
        await work()
    except Exception as error:
        return error
    raise AssertionError("it did not fail")


async def test_a_job_tells_which_server_it_lost_and_a_bug_from_an_outage(services: Services) -> None:
    """The job wrapper retries a job that lost Redis or PostgreSQL and says which (a PostgreSQL outage read as
    Redis's misled operators); a query that is wrong is no outage and is not retried."""
    port = closed_port()
    unreachable = create_async_engine(f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres")

    async def query(engine: AsyncEngine, sql: str) -> None:
        async with engine.connect() as connection:
            await connection.execute(text(sql))

    try:
        no_database = await failure_of(lambda: query(unreachable, "SELECT 1"))
    finally:
        await unreachable.dispose()
    gone = redis.asyncio.Redis(host="127.0.0.1", port=port)
    no_redis = await failure_of(gone.ping)
    await gone.aclose()
    bug = await failure_of(lambda: query(services.engine, "SELECT * FROM no_such_table"))
    assert (lost_server(no_database), lost_server(no_redis), lost_server(bug)) == ("PostgreSQL", "Redis", None)

    async def broken(ctx: dict[str, object]) -> None:
        await query(services.engine, "SELECT * FROM no_such_table")

    async def lost(ctx: dict[str, object]) -> None:
        engine = create_async_engine(f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres")
        try:
            await query(engine, "SELECT 1")
        finally:
            await engine.dispose()

    with pytest.raises(DBAPIError):
        await retried_on_redis(broken)({"job_try": 1})
    with pytest.raises(Retry):
        await retried_on_redis(lost)({"job_try": 1})
