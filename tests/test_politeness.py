"""Politeness: robots.txt obeyed and cached, Crawl-delay honoured; per site (registrable domain), one shared rate, one
back-off after a 429 and a cap on concurrent requests, all in Redis."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import pytest
from publicsuffixlist import PublicSuffixList
from sqlalchemy import select

from app.ingest.politeness import Politeness
from app.ingest.refresh import refresh_source
from app.ingest.sites import registrable_domain, site_of
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


async def test_a_site_bucket_spaces_requests_at_its_rate(services: Services, settings: Settings, http: Any) -> None:
    politeness = Politeness(services.redis, http, settings)
    waits = [await politeness.reserve("https://one.example", rate=2.0) for _ in range(5)]
    assert waits[0] == 0
    steps = [later - earlier for earlier, later in itertools.pairwise(waits)]
    assert all(0.45 < step <= 0.5 for step in steps), waits  # each caller gets its own slot, 1/rate apart
    assert await politeness.reserve("https://other.example", rate=2.0) == 0  # sites are independent


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
    first, second = [await politeness.admit(feed_server.url("/public/feed.xml")) for _ in range(2)]
    assert 3 < second.wait_s - first.wait_s <= 4  # Crawl-delay 4 s beats the configured rate


async def test_a_robots_txt_starting_with_a_byte_order_mark_is_obeyed(
    services: Services, settings: Settings, feed_server: FeedServer, http: Any
) -> None:
    # given a robots.txt saved by an editor that writes a UTF-8 byte order mark before its first line
    robots = "\ufeffUser-agent: *\nDisallow: /private\nCrawl-delay: 10\n".encode()
    feed_server.routes["/robots.txt"] = Reply(200, robots)
    politeness = Politeness(services.redis, http, settings)
    # when its pages are admitted
    private = await politeness.admit(feed_server.url("/private/feed.xml"))
    # then its first group is read: /private is refused and its Crawl-delay applies
    assert (private.allowed, private.error_class) == (False, "robots_disallowed")
    assert (await politeness.robots(feed_server.url(""))).crawl_delay("newsagg") == 10


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


def test_a_site_is_a_registrable_domain() -> None:
    assert site_of("https://feeds.bbc.co.uk/news/rss.xml") == site_of("http://www.BBC.co.uk:8080/") == "bbc.co.uk"
    assert site_of("https://feeds.bbci.co.uk/news/rss.xml") == "bbci.co.uk"  # another registrable domain
    assert site_of("https://alice.github.io/feed") != site_of("https://bob.github.io/feed")  # a private suffix
    assert site_of("http://127.0.0.1:8000/feed") == "127.0.0.1"
    assert site_of("http://[::1]:8000/feed") == "::1"
    assert registrable_domain("co.uk") == "co.uk"  # a bare public suffix is its own site


def test_the_public_suffix_list_is_read_from_the_package_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the public suffix list must not be fetched")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    assert PublicSuffixList().privatesuffix("www.example.com.au") == "example.com.au"


async def test_hosts_of_one_site_share_its_bucket(services: Services, settings: Settings, http: Any) -> None:
    politeness = Politeness(services.redis, http, settings)
    waits = [await politeness.reserve(url, rate=1.0) for url in
             ("https://feeds.news.example.co.uk/a.xml", "https://www.news.example.co.uk/b.xml")]  # fmt: skip
    assert waits[0] == 0
    assert 0.5 < waits[1] <= 1  # one site: the second host waits its turn
    assert await politeness.reserve("https://www.other-news.co.uk/", rate=1.0) == 0


async def test_a_back_off_holds_every_host_of_the_site(services: Services, settings: Settings, http: Any) -> None:
    politeness = Politeness(services.redis, http, settings)
    await politeness.back_off("https://feeds.news.example/rss", 120)
    waits = [await politeness.reserve("https://www.news.example/page", rate=10.0) for _ in range(3)]
    assert 119 < waits[0] <= 120
    assert 0.05 < waits[1] - waits[0] <= 0.1  # after the back-off, spaced as usual
    assert await politeness.reserve("https://news.other.example/", rate=10.0) == 0


async def test_a_429_from_one_feed_defers_the_other_feeds_of_its_site(
    services: Services, settings: Settings, feed_server: FeedServer, http: Any
) -> None:
    feed_server.routes["/throttled.xml"] = Reply(429, b"", headers={"Retry-After": "300"})
    feed_server.routes["/other.xml"] = Reply(200, rss(items(1)))
    ids = []
    async with services.db.begin() as session:
        for path in ("/throttled.xml", "/other.xml"):
            ids.append((await create_source(session, settings, SourceRequest(feed_url=feed_server.url(path)))).id)
    politeness = Politeness(services.redis, http, settings)
    throttled = await refresh_source(services.engine, http, settings, ids[0], politeness=politeness)
    other = await refresh_source(services.engine, http, settings, ids[1], politeness=politeness)
    assert (throttled.status, throttled.error_class) == ("failed", "http_status")
    assert other.status == "deferred"
    assert other.retry_in_s is not None
    assert 299 < other.retry_in_s <= 300
    assert feed_server.hits.get("/other.xml") is None


async def test_a_site_has_at_most_its_cap_of_requests_in_flight_across_workers(
    services: Services, settings: Settings, http: Any
) -> None:
    capped = settings.model_copy(update={"politeness_concurrent_per_site": 2})
    workers = [Politeness(services.redis, http, capped) for _ in range(3)]
    async with contextlib.AsyncExitStack() as stack:
        held = [await stack.enter_async_context(w.slot(f"https://h{i}.news.example/")) for i, w in enumerate(workers)]
        assert held == [True, True, False]
        async with workers[2].slot("https://elsewhere.example/") as other_site:
            assert other_site
    async with workers[2].slot("https://news.example/") as after_release:
        assert after_release  # the slots came back when their holders finished


async def test_a_dead_workers_slot_expires_with_its_lease(services: Services, settings: Settings, http: Any) -> None:
    capped = settings.model_copy(update={"politeness_concurrent_per_site": 1, "politeness_slot_lease_seconds": 0.5})
    dead = Politeness(services.redis, http, capped)
    assert await dead.slot("https://news.example/").__aenter__()  # taken, and never given back
    alive = Politeness(services.redis, http, capped)
    async with alive.slot("https://news.example/") as taken:
        assert not taken
    for _ in range(100):
        async with alive.slot("https://news.example/") as taken:
            if taken:
                break
        await asyncio.sleep(0.1)
    assert taken


async def test_a_refresh_that_finds_its_site_full_is_deferred_not_fetched(
    services: Services, settings: Settings, feed_server: FeedServer, http: Any
) -> None:
    feed_server.routes["/feed.xml"] = Reply(200, rss(items(1)))
    async with services.db.begin() as session:
        source = await create_source(session, settings, SourceRequest(feed_url=feed_server.url("/feed.xml")))
    capped = settings.model_copy(update={"politeness_concurrent_per_site": 1})
    politeness = Politeness(services.redis, http, capped)
    async with politeness.slot(feed_server.url("/elsewhere")):  # another request to the site is in flight
        outcome = await refresh_source(services.engine, http, capped, source.id, politeness=politeness)
    assert (outcome.status, outcome.retry_in_s) == ("deferred", capped.politeness_slot_retry_seconds)
    assert feed_server.hits.get("/feed.xml") is None
    outcome = await refresh_source(services.engine, http, capped, source.id, politeness=politeness, admitted=True)
    assert outcome.status == "fetched"
