"""Politeness: robots.txt obeyed and cached, Crawl-delay honoured, one shared per-host rate in Redis."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from app.ingest.politeness import Politeness
from app.ingest.transport import guarded_transport
from app.services import Services
from app.settings import Settings
from app.sources.models import FetchLog
from app.sources.service import SourceRequest, create_source
from tests.feeds import FeedServer, Reply, items, rss

Crawl = Callable[[], Coroutine[Any, Any, int]]


@pytest.fixture
async def http() -> Any:
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits())) as client:
        yield client


async def test_a_host_bucket_spaces_requests_at_its_rate(services: Services, settings: Settings, http: Any) -> None:
    politeness = Politeness(services.redis, http, settings)
    waits = [await politeness.reserve("https://one.example", rate=2.0) for _ in range(5)]
    assert waits[0] == 0
    steps = [later - earlier for earlier, later in itertools.pairwise(waits)]
    assert all(0.45 < step <= 0.5 for step in steps), waits  # each caller gets its own slot, 1/rate apart
    assert await politeness.reserve("https://other.example", rate=2.0) == 0  # hosts are independent


async def test_the_bucket_is_shared_by_concurrent_workers(services: Services, settings: Settings, http: Any) -> None:
    workers = [Politeness(services.redis, http, settings) for _ in range(4)]
    waits = await asyncio.gather(*(w.reserve("https://shared.example", rate=10.0) for w in workers for _ in range(5)))
    assert sorted(round(w * 10) for w in waits) == list(range(20))  # 20 distinct slots, 0.1 s apart


async def test_robots_disallow_is_obeyed_and_cached(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl, http: Any
) -> None:
    feed_server.routes["/robots.txt"] = Reply(200, b"User-agent: *\nDisallow: /private/\nCrawl-delay: 4\n")
    feed_server.routes["/private/feed.xml"] = Reply(200, rss(items(1)))
    feed_server.routes["/public/feed.xml"] = Reply(200, rss(items(1)))
    async with services.db.begin() as session:
        for path in ("/private/feed.xml", "/public/feed.xml"):
            await create_source(session, settings, SourceRequest(feed_url=feed_server.url(path)))
    await crawl()
    assert feed_server.hits.get("/private/feed.xml") is None
    assert feed_server.hits["/public/feed.xml"] == 1
    assert feed_server.hits["/robots.txt"] == 1  # fetched once, then cached
    async with services.db() as session:
        classes = set((await session.scalars(select(FetchLog.error_class))).all())
    assert "robots_disallowed" in classes
    politeness = Politeness(services.redis, http, settings)
    host = feed_server.url("")
    assert (await politeness.robots(host)).crawl_delay("newsagg") == 4
    admission = await politeness.admit(feed_server.url("/public/feed.xml"))
    assert 0 < admission.wait_s <= 4  # Crawl-delay 4 s beats the configured rate


async def test_robots_errors(services: Services, settings: Settings, feed_server: FeedServer, http: Any) -> None:
    politeness = Politeness(services.redis, http, settings)
    host = feed_server.url("")
    feed_server.routes["/robots.txt"] = Reply(404, b"")
    assert (await politeness.robots(host)).can_fetch(host + "/any", "newsagg")
    await services.redis.flushdb()
    feed_server.routes["/robots.txt"] = Reply(503, b"")
    assert not (await politeness.robots(host)).can_fetch(host + "/any", "newsagg")  # RFC 9309: 5xx = disallow
    assert await services.redis.ttl(f"newsagg:robots:{host}") <= 600  # and asked again soon


async def test_jobs_for_one_host_that_start_together_fetch_its_robots_txt_once(
    services: Services, settings: Settings, feed_server: FeedServer, http: Any
) -> None:
    feed_server.routes["/robots.txt"] = Reply(200, b"User-agent: *\nDisallow: /private/\n")
    politeness = Politeness(services.redis, http, settings)
    host = feed_server.url("")
    answers = await asyncio.gather(*(politeness.robots(host) for _ in range(10)))
    assert feed_server.hits["/robots.txt"] == 1
    assert not any(robots.can_fetch(host + "/private/feed.xml", "newsagg") for robots in answers)
