"""Fetching against a real loopback server: encodings, bombs, throttling, retries, timeouts, robots, SSRF."""

from __future__ import annotations

import contextlib
import gzip
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

import brotli
import httpx
import pytest
from sqlalchemy import select, update

from app.articles.models import Article
from app.ingest.addresses import AddressRefused
from app.ingest.fetch import FetchError, FetchPolicy, fetch_feed
from app.ingest.transport import guarded_transport
from app.services import Services
from app.settings import Settings
from app.sources.models import Circuit, CrawlSchedule, FetchLog, Source, SourceStatus
from app.sources.service import SourceRequest, create_source
from tests.feeds import FeedServer, Reply, Route, items, rss

Crawl = Callable[[], Coroutine[Any, Any, int]]


async def add(services: Services, settings: Settings, url: str) -> int:
    async with services.db.begin() as session:
        return (await create_source(session, settings, SourceRequest(feed_url=url))).id


async def crawl_timing_out(services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl, path: str,
                           route: Route) -> int:  # fmt: skip
    """A source served by `route` at `path`, crawled once with a half-second fetch timeout; returns its id."""
    feed_server.routes[path] = route
    source_id = await add(services, settings, feed_server.url(path))
    settings.fetch_timeout_seconds, saved = 0.5, settings.fetch_timeout_seconds
    try:
        await crawl()
    finally:
        settings.fetch_timeout_seconds = saved
    return source_id


async def due_now(services: Services) -> None:
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).values(next_crawl_at=datetime.now(UTC) - timedelta(seconds=1)))


async def schedule_of(services: Services, source_id: int) -> CrawlSchedule:
    async with services.db() as session:
        row = await session.get(CrawlSchedule, source_id)
        assert row is not None
        return row


async def log_of(services: Services) -> list[FetchLog]:
    async with services.db() as session:
        return list(await session.scalars(select(FetchLog).order_by(FetchLog.id)))


async def articles(services: Services) -> int:
    async with services.db() as session:
        return len((await session.scalars(select(Article.id))).all())


async def test_gzip_and_brotli_bodies_are_decoded(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    feed_server.routes["/gz.xml"] = Reply(200, gzip.compress(rss(items(2, prefix="Gz"))), {"Content-Encoding": "gzip"})
    feed_server.routes["/br.xml"] = Reply(200, brotli.compress(rss(items(3, prefix="Br"))), {"Content-Encoding": "br"})
    await add(services, settings, feed_server.url("/gz.xml"))
    await add(services, settings, feed_server.url("/br.xml"))
    await crawl()
    assert await articles(services) == 5
    assert "br" in feed_server.requests[-1]["accept-encoding"]


async def test_a_gzip_bomb_stops_at_the_cap(settings: Settings, feed_server: FeedServer) -> None:
    bomb = gzip.compress(b"<rss>" + b" " * (50 * 1024 * 1024))  # 50 MiB of spaces, ~50 KB on the wire
    feed_server.routes["/bomb.xml"] = Reply(200, bomb, {"Content-Encoding": "gzip"})
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits())) as client:
        with pytest.raises(FetchError) as caught:
            await fetch_feed(client, feed_server.url("/bomb.xml"), FetchPolicy(1024 * 1024, 5))
    assert caught.value.error_class == "too_large"
    assert len(bomb) < 1024 * 1024  # the wire size alone would have passed the cap


async def test_a_wrong_content_type_does_not_stop_a_real_feed(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    feed_server.routes["/plain"] = Reply(200, rss(items(2)), {"Content-Type": "text/plain"})
    await add(services, settings, feed_server.url("/plain"))
    await crawl()
    assert await articles(services) == 2


async def test_429_with_retry_after_backs_off_without_a_strike(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    feed_server.routes["/busy.xml"] = Reply(429, b"slow down", {"Retry-After": "3600"})
    source_id = await add(services, settings, feed_server.url("/busy.xml"))
    for _ in range(4):
        await due_now(services)
        await crawl()
        assert await services.redis.ttl("newsagg:bucket:127.0.0.1") > 3600  # the whole site backs off ...
        await services.redis.delete("newsagg:bucket:127.0.0.1")  # ... until the hour has passed
    schedule = await schedule_of(services, source_id)
    assert schedule.consecutive_failures == 0
    assert schedule.throttle_streak == 4
    assert schedule.next_crawl_at > datetime.now(UTC) + timedelta(minutes=59)
    assert feed_server.hits["/busy.xml"] == 4  # no fast retries on a 429


async def test_transient_errors_are_retried_then_counted_once(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    feed_server.routes["/flaky.xml"] = Reply(500, b"oops")
    source_id = await add(services, settings, feed_server.url("/flaky.xml"))
    await crawl()
    assert feed_server.hits["/flaky.xml"] == 4  # one attempt and three retries
    log = await log_of(services)
    assert [entry.status_code for entry in log] == [500] * 4
    assert "attempt 1 of 4" in (log[0].error_message or "")
    assert (await schedule_of(services, source_id)).consecutive_failures == 1


async def test_a_retry_that_succeeds_is_a_success(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    answers = iter([Reply(502, b""), Reply(200, rss(items(2)))])
    feed_server.routes["/once.xml"] = lambda handler: next(answers)
    source_id = await add(services, settings, feed_server.url("/once.xml"))
    await crawl()
    assert await articles(services) == 2
    assert (await schedule_of(services, source_id)).consecutive_failures == 0


async def test_slow_servers_time_out(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    def slow(handler: Any) -> Reply:
        time.sleep(1.5)
        return Reply(200, rss(items(1)))

    source_id = await crawl_timing_out(services, settings, feed_server, crawl, "/slow.xml", slow)
    assert {entry.error_class for entry in await log_of(services)} == {"timeout"}
    assert (await schedule_of(services, source_id)).consecutive_failures == 1


async def test_gone_sources_die_after_a_day_and_three_confirmations(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl, gql: Any
) -> None:
    feed_server.routes["/gone.xml"] = Reply(410, b"")
    source_id = await add(services, settings, feed_server.url("/gone.xml"))
    for attempt in range(4):
        await due_now(services)
        await crawl()
        if attempt == 0:  # three answers within minutes are not enough: the streak's first answer a day ago is
            async with services.db() as session:
                assert (await session.get(Source, source_id)).status == SourceStatus.ACTIVE  # type: ignore[union-attr]
            async with services.db.begin() as session:
                await session.execute(update(CrawlSchedule).where(CrawlSchedule.source_id == source_id)
                                      .values(gone_since=datetime.now(UTC) - timedelta(hours=25)))  # fmt: skip
    async with services.db() as session:
        source = await session.get(Source, source_id)
    assert source is not None
    assert source.status == SourceStatus.DEAD
    assert feed_server.hits["/gone.xml"] == 3  # a dead source is not claimed again
    data = await gql.run("Sources", status="DEAD")
    assert "HTTP 410" in data["sources"]["edges"][0]["node"]["crawl"]["lastError"]


async def test_an_open_circuit_is_probed_half_open(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    feed_server.routes["/down.xml"] = Reply(403, b"")
    source_id = await add(services, settings, feed_server.url("/down.xml"))
    for _ in range(5):
        await due_now(services)
        await crawl()
    assert (await schedule_of(services, source_id)).circuit == Circuit.OPEN
    feed_server.routes["/down.xml"] = Reply(200, rss(items(1)))
    await due_now(services)
    await crawl()
    schedule = await schedule_of(services, source_id)
    assert (schedule.circuit, schedule.consecutive_failures) == (Circuit.CLOSED, 0)


async def test_a_stable_permanent_redirect_moves_the_stored_url(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    feed_server.routes["/old.xml"] = Reply(301, b"", {"Location": "/new.xml"})
    feed_server.routes["/new.xml"] = Reply(200, rss(items(1)))
    feed_server.routes["/temp.xml"] = Reply(302, b"", {"Location": "/new.xml"})
    moved = await add(services, settings, feed_server.url("/old.xml"))
    kept = await add(services, settings, feed_server.url("/temp.xml"))
    for _ in range(3):
        await due_now(services)
        await crawl()
    async with services.db() as session:
        urls = {s.id: s.feed_url for s in await session.scalars(select(Source))}
    assert urls[moved] == feed_server.url("/new.xml")
    assert urls[kept] == feed_server.url("/temp.xml")  # a temporary redirect never moves it


async def test_the_connected_address_is_checked_whatever_the_name(feed_server: FeedServer) -> None:
    """DNS rebinding: a name that passed a check earlier may point at loopback now; the connect is refused."""
    feed_server.routes["/x.xml"] = Reply(200, rss(items(1)))
    url = feed_server.url("/x.xml").replace("127.0.0.1", "localhost")
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=False, limits=httpx.Limits())) as client:
        with pytest.raises(FetchError) as caught:
            await fetch_feed(client, url, FetchPolicy(1 << 20, 5))
        assert caught.value.error_class == "address_refused"
        with pytest.raises(AddressRefused):
            await client.get("http://[::ffff:169.254.169.254]/latest/meta-data")
    assert feed_server.hits.get("/x.xml") is None


async def test_a_body_that_stalls_times_out(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    def trickle(handler: Any) -> None:
        body = rss(items(3))
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body[:100])
        handler.wfile.flush()
        time.sleep(2)  # headers and a first chunk, then silence longer than the read timeout

    source_id = await crawl_timing_out(services, settings, feed_server, crawl, "/trickle.xml", trickle)
    assert {entry.error_class for entry in await log_of(services)} == {"timeout"}
    assert (await schedule_of(services, source_id)).consecutive_failures == 1
    assert await articles(services) == 0


def drip(handler: Any) -> None:
    """A 200 whose body comes a byte every 0.1 s: every read waits less than any read timeout, for 4 s in all."""
    body = rss(items(1))[:40]
    with contextlib.suppress(OSError):
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        for byte in body:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.1)


async def test_a_fetch_has_a_deadline_for_the_whole_answer(feed_server: FeedServer) -> None:
    feed_server.routes["/drip.xml"] = drip
    transport = guarded_transport(allow_loopback=True, limits=httpx.Limits())
    async with httpx.AsyncClient(transport=transport, timeout=0.5) as client:
        with pytest.raises(FetchError) as caught:
            await fetch_feed(client, feed_server.url("/drip.xml"), FetchPolicy(1 << 20, 1, total_s=1.0))
    assert caught.value.error_class == "timeout"
    assert caught.value.transient


async def test_a_body_that_drips_times_out_as_a_counted_failure(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    settings.fetch_total_seconds, saved = 1.0, settings.fetch_total_seconds
    try:
        source_id = await crawl_timing_out(services, settings, feed_server, crawl, "/drip.xml", drip)
    finally:
        settings.fetch_total_seconds = saved
    assert {entry.error_class for entry in await log_of(services)} == {"timeout"}
    assert (await schedule_of(services, source_id)).consecutive_failures == 1
    assert await articles(services) == 0
