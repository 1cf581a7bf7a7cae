"""The ingest slice end to end: sourceCreate → crawl tick (SKIP LOCKED) → arq refresh job → articles."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update

from app.articles.models import Article
from app.ingest.scheduler import claim_due_sources
from app.services import Services
from app.settings import Settings
from app.sources.models import ClaimStatus, CrawlSchedule, FetchLog, Source
from app.sources.service import SourceRequest, create_source
from tests.conftest import GraphQLClient
from tests.feeds import FeedServer, Reply, atom, items, rss
from tests.newsroom import administrator

Crawl = Callable[[], Coroutine[Any, Any, int]]


async def add_source(gql: GraphQLClient, url: str, **extra: Any) -> dict[str, Any]:
    data = await gql.run("SourceCreate", input={"feedUrl": url, **extra})
    payload: dict[str, Any] = data["sourceCreate"]
    return payload


async def count(services: Services, model: Any) -> int:
    async with services.db() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def make_due(services: Services) -> None:
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).values(next_crawl_at=datetime.now(UTC) - timedelta(seconds=1)))


async def test_a_new_source_is_crawled_and_its_articles_served(
    gql: GraphQLClient, feed_server: FeedServer, crawl: Crawl, services: Services
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/world.xml"] = Reply(200, rss(items(4)), {"Content-Type": "application/rss+xml"})
    created = await add_source(admin, feed_server.url("/world.xml"), name="World Desk")
    assert created["errors"] == []
    assert created["source"]["crawl"]["claim"] == "PENDING"

    await crawl()

    data = await gql.run("Articles", first=10)
    titles = [edge["node"]["title"] for edge in data["articles"]["edges"]]
    assert titles == ["Story 3", "Story 2", "Story 1", "Story 0"]  # newest first
    node = data["articles"]["edges"][0]["node"]
    assert node["source"]["name"] == "World Desk"
    assert node["url"] == "https://news.example.org/story-3"
    assert node["summary"] == "Summary of Story 3"
    sources = await gql.run("Sources")
    crawl_state = sources["sources"]["edges"][0]["node"]["crawl"]
    assert crawl_state["claim"] == "PENDING"
    assert crawl_state["lastFetchedAt"] is not None
    assert crawl_state["articlesPerHour"] > 0
    assert await count(services, FetchLog) == 1


async def test_each_url_is_stored_once_and_unchanged_feeds_cost_no_parse(
    gql: GraphQLClient, feed_server: FeedServer, crawl: Crawl, services: Services
) -> None:
    admin = await administrator(gql, services)
    body = rss(items(3))

    def conditional(handler: Any) -> Reply:
        if handler.headers.get("If-None-Match") == '"v1"':
            return Reply(304, b"", {"ETag": '"v1"'})
        return Reply(200, body, {"ETag": '"v1"', "Content-Type": "application/rss+xml"})

    feed_server.routes["/a.xml"] = conditional
    # A second outlet syndicates the same article URLs: still one row per URL.
    feed_server.routes["/b.xml"] = Reply(200, atom(items(3)), {"Content-Type": "application/atom+xml"})
    await add_source(admin, feed_server.url("/a.xml"))
    await add_source(admin, feed_server.url("/b.xml"))
    await crawl()
    assert await count(services, Article) == 3

    await make_due(services)
    await crawl()
    assert await count(services, Article) == 3
    second_a = [r for r in feed_server.requests if r["path"] == "/a.xml"][1]
    assert second_a["if-none-match"] == '"v1"'
    async with services.db() as session:
        statuses = sorted((await session.scalars(select(FetchLog.status_code))).all())
    assert statuses == [200, 200, 200, 304]


async def test_new_items_in_a_later_fetch_are_added(
    gql: GraphQLClient, feed_server: FeedServer, crawl: Crawl, services: Services
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/f.xml"] = Reply(200, rss(items(2)))
    await add_source(admin, feed_server.url("/f.xml"))
    await crawl()
    feed_server.routes["/f.xml"] = Reply(200, rss(items(2, start=1)))  # one old, one new
    await make_due(services)
    await crawl()
    assert await count(services, Article) == 3
    async with services.db() as session:
        log = (await session.scalars(select(FetchLog).order_by(FetchLog.id))).all()
    assert [(entry.items_seen, entry.items_new) for entry in log] == [(2, 2), (2, 1)]


async def test_failures_are_logged_counted_and_backed_off(
    gql: GraphQLClient, feed_server: FeedServer, crawl: Crawl, services: Services
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/html.xml"] = Reply(200, b"<!DOCTYPE html><html><body>Login</body></html>",
                                            {"Content-Type": "text/html"})  # fmt: skip
    feed_server.routes["/big.xml"] = Reply(200, b"<rss>" + b" " * (2 * 1024 * 1024))
    await add_source(admin, feed_server.url("/html.xml"))
    await add_source(admin, feed_server.url("/gone.xml"))  # 404
    await add_source(admin, feed_server.url("/big.xml"))
    services.settings.fetch_max_body_bytes, saved = 1024 * 1024, services.settings.fetch_max_body_bytes
    try:
        before = datetime.now(UTC)
        await crawl()
    finally:
        services.settings.fetch_max_body_bytes = saved
    async with services.db() as session:
        log = {row.source_id: row for row in await session.scalars(select(FetchLog))}
        schedules = {row.source_id: row for row in await session.scalars(select(CrawlSchedule))}
    assert sorted(entry.error_class or "" for entry in log.values()) == ["http_status", "parse", "too_large"]
    for schedule in schedules.values():
        assert schedule.consecutive_failures == 1
        assert schedule.status == ClaimStatus.PENDING
        assert schedule.next_crawl_at >= before + timedelta(seconds=59)  # 2^1 min back-off, minus slack
        assert schedule.last_error
    assert await count(services, Article) == 0
    data = await gql.run("Sources")
    errors = sorted(edge["node"]["crawl"]["lastError"] for edge in data["sources"]["edges"])
    assert any("HTML page" in e for e in errors)
    assert any("HTTP 404" in e for e in errors)


async def test_concurrent_claims_never_share_a_source(services: Services, settings: Settings) -> None:
    async with services.db.begin() as session:
        for k in range(30):
            await create_source(session, settings, SourceRequest(feed_url=f"http://127.0.0.1:9/feed-{k}"))

    async def claim() -> list[int]:
        async with services.db.begin() as session:
            ids = await claim_due_sources(session, settings.model_copy(update={"crawl_batch_size": 12}))
            await asyncio.sleep(0.05)  # hold the row locks while the others claim
            return ids

    batches = await asyncio.gather(claim(), claim(), claim())
    claimed = [source_id for batch in batches for source_id in batch]
    assert len(claimed) == len(set(claimed)) == 30
    async with services.db() as session:
        in_flight = await session.scalar(
            select(func.count()).select_from(CrawlSchedule).where(CrawlSchedule.status == ClaimStatus.IN_FLIGHT)
        )
    assert in_flight == 30


async def test_stale_in_flight_claims_return_to_pending(services: Services, settings: Settings) -> None:
    async with services.db.begin() as session:
        await create_source(session, settings, SourceRequest(feed_url="http://127.0.0.1:9/stale"))
    async with services.db.begin() as session:
        assert len(await claim_due_sources(session, settings)) == 1
    async with services.db.begin() as session:
        assert await claim_due_sources(session, settings) == []  # in flight, not yet stale
    later = datetime.now(UTC) + timedelta(minutes=11)
    async with services.db.begin() as session:
        assert len(await claim_due_sources(session, settings, now=later)) == 1


async def test_source_create_refuses_bad_input_with_typed_errors(
    gql: GraphQLClient, services: Services, feed_server: FeedServer
) -> None:
    admin = await administrator(gql, services)
    cases = {
        "ftp://example.com/feed": "INVALID_URL",
        "not a url": "INVALID_URL",
        "http://10.0.0.1/feed": "ADDRESS_REFUSED",
        "http://169.254.169.254/latest/meta-data": "ADDRESS_REFUSED",
    }
    for url, code in cases.items():
        payload = await add_source(admin, url)
        assert payload["source"] is None
        assert [(e["code"], e["field"]) for e in payload["errors"]] == [(code, "feedUrl")], url
    first = await add_source(admin, feed_server.url("/dup.xml"))
    assert first["errors"] == []
    again = await add_source(admin, feed_server.url("/dup.xml?utm_source=x"))  # the same URL once normalized
    assert [e["code"] for e in again["errors"]] == ["DUPLICATE"]
    bad_bounds = await add_source(admin, feed_server.url("/b.xml"), minIntervalMinutes=10, maxIntervalMinutes=5)
    assert [e["code"] for e in bad_bounds["errors"]] == ["INVALID"]
    assert await count(services, Source) == 1


async def test_loopback_sources_are_refused_unless_allowed(gql: GraphQLClient, services: Services) -> None:
    admin = await administrator(gql, services)
    services.settings.allow_loopback_sources = False
    try:
        payload = await add_source(admin, "http://127.0.0.1:8080/feed.xml")
        localhost = await add_source(admin, "http://localhost:8080/feed.xml")
    finally:
        services.settings.allow_loopback_sources = True
    assert [e["code"] for e in payload["errors"]] == ["ADDRESS_REFUSED"]
    assert [e["code"] for e in localhost["errors"]] == ["ADDRESS_REFUSED"]
    assert await count(services, Source) == 0


async def test_redirects_are_followed_and_checked_hop_by_hop(
    gql: GraphQLClient, feed_server: FeedServer, crawl: Crawl, services: Services
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/old.xml"] = Reply(301, b"", {"Location": "/new.xml"})
    feed_server.routes["/new.xml"] = Reply(200, rss(items(1)))
    feed_server.routes["/evil.xml"] = Reply(302, b"", {"Location": "http://169.254.169.254/latest/meta-data"})
    feed_server.routes["/loop.xml"] = Reply(302, b"", {"Location": "/loop.xml"})
    for path in ("/old.xml", "/evil.xml", "/loop.xml"):
        await add_source(admin, feed_server.url(path))
    await crawl()
    async with services.db() as session:
        classes = sorted((await session.scalars(select(FetchLog.error_class))).all(), key=str)
    assert classes == [None, "address_refused", "too_many_redirects"]
    assert await count(services, Article) == 1
    assert feed_server.hits["/loop.xml"] == 6  # the first request and five redirects


async def test_a_retitled_entry_is_not_a_new_article(
    gql: GraphQLClient, feed_server: FeedServer, crawl: Crawl, services: Services
) -> None:
    """Miniflux users see duplicates when a publisher edits a title; the GUID (or the URL) keeps one row."""
    admin = await administrator(gql, services)
    from tests.feeds import Item

    first = [Item(title="Quake hits coast", link="https://n.example/quake", guid="n-1")]
    feed_server.routes["/n.xml"] = Reply(200, rss(first))
    await add_source(admin, feed_server.url("/n.xml"))
    await crawl()
    edited = [Item(title="Quake of magnitude 7 hits coast, dozens hurt", link="https://n.example/quake?ref=rss",
                   guid="n-1")]  # fmt: skip
    feed_server.routes["/n.xml"] = Reply(200, rss(edited))
    await make_due(services)
    await crawl()
    assert await count(services, Article) == 1


async def test_source_refresh_fetches_now_reactivates_and_is_throttled(
    gql: GraphQLClient, feed_server: FeedServer, crawl: Crawl, services: Services
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/r.xml"] = Reply(200, rss(items(2)))
    created = await add_source(admin, feed_server.url("/r.xml"))
    source_id = created["source"]["id"]
    async with services.db.begin() as session:  # not due for an hour, and paused
        await session.execute(update(CrawlSchedule).values(next_crawl_at=datetime.now(UTC) + timedelta(hours=1)))
        await session.execute(update(Source).values(status="paused"))
    result = (await admin.run("SourceRefresh", id=source_id))["sourceRefresh"]
    assert (result["queued"], result["errors"], result["source"]["status"]) == (True, [], "ACTIVE")
    await crawl(tick=False)  # only the job the mutation queued
    assert await count(services, Article) == 2
    again = (await admin.run("SourceRefresh", id=source_id))["sourceRefresh"]
    assert again["errors"][0]["code"] == "THROTTLED"
    assert 0 < again["errors"][0]["retryAfterSeconds"] <= 60
    missing = (await admin.run("SourceRefresh", id="U291cmNlOjk5OTk5"))["sourceRefresh"]  # Source:99999
    assert missing["errors"][0]["code"] == "NOT_FOUND"
