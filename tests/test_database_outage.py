"""PostgreSQL stopped for ten seconds under a running API, then started again on the same port and data; and the
same under a worker that is ingesting.

While it is away every GraphQL request is answered promptly with a coded, masked error (no SQL, driver or traceback
text) and /healthz says 503 with the database not ok, so a balancer takes the instance out of rotation; once it is
back the same instance answers queries and reports healthy again without a restart. A worker keeps running through
the outage and goes on storing and understanding articles once it is back, every story whole. Each test runs a
PostgreSQL server of its own, so stopping it touches nobody else."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import TextClause, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db.engine import session_factory
from app.db.migrate import upgrade
from app.runtime.embedded import EmbeddedPostgres
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from tests.conftest import serve_api
from tests.feeds import FeedServer, answer, items, rss
from tests.processes import deployment_env, running

SOURCES = "{ sources(first: 5) { edges { node { id } } } }"
OUTAGE_SECONDS = 10
PROMPT_SECONDS = 5  # a request that takes longer than this during the outage counts as hung
LEAKS = ("asyncpg", "sqlalchemy", "Traceback", "SELECT", "Connection refused", "postgres")


async def sources(http: httpx.AsyncClient) -> tuple[int, dict[str, Any]]:
    response = await http.post("/graphql", json={"query": SOURCES}, timeout=PROMPT_SECONDS)
    return response.status_code, response.json()


async def health(http: httpx.AsyncClient) -> tuple[int, dict[str, Any]]:
    response = await http.get("/healthz", timeout=PROMPT_SECONDS)
    return response.status_code, response.json()


async def test_the_api_answers_coded_errors_while_postgresql_is_away_and_recovers_when_it_returns(
    settings: Settings, tmp_path: Path
) -> None:
    server = EmbeddedPostgres(tmp_path / "pg")
    server.start()
    opened: Services | None = None
    try:
        engine = create_async_engine(server.url())
        await upgrade(engine)
        await engine.dispose()
        opened = Services.open(settings.model_copy(update={"database_url": server.url()}))
        async with serve_api(opened.settings, opened) as api_url, httpx.AsyncClient(base_url=api_url) as http:
            # given a working API
            status, body = await sources(http)
            assert (status, body.get("errors")) == (200, None), body
            assert body["data"]["sources"]["edges"] == []
            assert (await health(http))[0] == 200

            # when PostgreSQL goes away for ten seconds
            port = server.port
            server.stop()
            codes: set[str] = set()
            rounds = 0
            deadline = time.monotonic() + OUTAGE_SECONDS
            while time.monotonic() < deadline:
                started = time.monotonic()
                response = await http.post("/graphql", json={"query": SOURCES}, timeout=PROMPT_SECONDS)
                assert time.monotonic() - started < PROMPT_SECONDS
                assert response.status_code == 200, response.text  # a GraphQL error, not a crashed server
                body = response.json()
                assert body["data"] is None, body
                assert body["errors"], body
                codes.update(error["extensions"]["code"] for error in body["errors"])
                assert not [leak for leak in LEAKS if leak.lower() in response.text.lower()], response.text
                status, report = await health(http)
                assert (status, report["ok"], report["database"]["ok"]) == (503, False, False), report
                rounds += 1
                await asyncio.sleep(0.25)
            assert rounds >= 10
            assert codes == {"INTERNAL_SERVER_ERROR"}

            # then it comes back on the same port and data: the same API answers again on its own
            server.start()
            assert server.port == port
            async with asyncio.timeout(30):
                while True:
                    status, body = await sources(http)
                    if status == 200 and not body.get("errors") and (await health(http))[0] == 200:
                        break
                    await asyncio.sleep(0.25)
            assert body["data"]["sources"]["edges"] == []
    finally:
        if opened is not None:
            await opened.close()
        server.stop()


FEEDS, PER_FETCH = 4, 5
INGEST_OUTAGE_SECONDS = 10


def growing_feeds(server: FeedServer) -> list[str]:
    """Each fetch of a feed finds PER_FETCH more items than the last: the worker always has articles to store."""
    for k in range(FEEDS):

        def reply(handler: BaseHTTPRequestHandler, k: int = k, fetches: Iterator[int] = itertools.count(1)) -> None:
            answer(
                handler, rss(items(next(fetches) * PER_FETCH, prefix=f"Desk{k}", site=f"https://desk{k}.example.org"))
            )

        server.routes[f"/desk-{k}.xml"] = reply
    return [server.url(f"/desk-{k}.xml") for k in range(FEEDS)]


STORED = text("SELECT count(*) FROM articles")
NOT_PLACED = text("SELECT count(*) FROM articles WHERE simhash IS NULL OR cluster_id IS NULL")
# a story whose count disagrees with its articles, or an article in a story that is not there
HALF_WRITTEN = text(
    "SELECT count(*) FROM story_clusters s WHERE s.merged_into_id IS NULL AND s.article_count <> "
    "(SELECT count(*) FROM articles a WHERE a.cluster_id = s.id)"
)
ORPHANS = text("SELECT count(*) FROM articles a WHERE a.cluster_id IS NOT NULL AND NOT EXISTS "
               "(SELECT 1 FROM story_clusters s WHERE s.id = a.cluster_id)")  # fmt: skip


async def scalar(engine: AsyncEngine, query: TextClause) -> int:
    async with engine.connect() as connection:
        return int(await connection.scalar(query) or 0)


async def until_count(engine: AsyncEngine, query: TextClause, done: Callable[[int], bool], seconds: float) -> int:
    """Polls `query` until `done` holds for its value (another process does the work); fails clearly after."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(SQLAlchemyError, OSError):  # the server may still be starting
            if done(found := await scalar(engine, query)):
                return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {seconds:.0f} s: {query}")


async def test_the_worker_resumes_ingest_after_a_postgresql_restart_and_leaves_no_half_written_story(
    settings: Settings, feed_server: FeedServer, tmp_path: Path
) -> None:
    server = EmbeddedPostgres(tmp_path / "pg")
    server.start()
    engine = create_async_engine(server.url())
    try:
        await upgrade(engine)
        own = settings.model_copy(update={"database_url": server.url(), "crawl_interval_floor_seconds": 3})
        async with session_factory(engine).begin() as session:
            for url in growing_feeds(feed_server):
                await create_source(session, own, SourceRequest(feed_url=url, min_interval_minutes=0.05,
                                                                max_interval_minutes=0.1))  # fmt: skip
        env = deployment_env(own, tmp_path / "home", NEWSAGG_CRAWL_TICK_SECONDS="1",
                             NEWSAGG_CRAWL_INTERVAL_FLOOR_SECONDS="3")  # fmt: skip
        with running(env, "worker", log=tmp_path / "worker.log") as worker:
            # given a worker storing articles
            before = await until_count(engine, STORED, lambda n: n >= 4 * FEEDS * PER_FETCH, 90)
            # when PostgreSQL stops under it for ten seconds, then starts again on its port and data
            await engine.dispose()
            server.stop()
            await asyncio.sleep(INGEST_OUTAGE_SECONDS)
            assert worker.process.poll() is None, worker.log.read_text()
            server.start()
            restarted = time.monotonic()
            # then the same worker goes on storing, and understands everything it stored
            await until_count(engine, STORED, lambda n: n > before, 90)
            resumed = time.monotonic() - restarted
            after = await until_count(engine, STORED, lambda n: n >= before + 4 * FEEDS * PER_FETCH, 90)
            await until_count(engine, NOT_PLACED, lambda n: n == 0, 90)
            assert worker.process.poll() is None, worker.log.read_text()
        print(f"\nPostgreSQL restarted under ingest: {before} articles stored before, {after} after, the worker "
              f"storing again {resumed:.1f} s after the restart; every article in a story, every story "
              f"whole")  # fmt: skip
        assert await scalar(engine, HALF_WRITTEN) == 0
        assert await scalar(engine, ORPHANS) == 0
    finally:
        await engine.dispose()
        server.stop()
