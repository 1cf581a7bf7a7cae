"""What a refresh, and a hub's push, leave of a source's crawl state: a body no parser can read is a strike (and its
replay goes on), a 404 streak is dead only once it has lasted, a politeness wait longer than a claim lives is not
waited with the claim, a push touches only the rate (and one stored while a refresh fetches keeps its counts, as do
fifty stored at once with a refresh that moves the feed), and a feed's move is stored normalized."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler

import httpx
import pytest
from sqlalchemy import func, select, update

from app.archive.replay import replay
from app.articles.models import Article
from app.ingest.politeness import Politeness
from app.ingest.refresh import ingest_body, longest_claimed_wait_s, refresh_source
from app.ingest.scheduler import claim_due_sources
from app.ingest.transport import guarded_transport
from app.services import Services
from app.settings import Settings
from app.sources.models import Circuit, ClaimStatus, CrawlSchedule, FetchLog, Source, SourceStatus
from app.sources.service import SourceRequest, create_source
from app.websub.intake import store_push
from app.websub.pushes import Pushed
from tests.feeds import FeedServer, Reply, items, rss

JSON_FEED = "application/feed+json"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits())) as client:
        yield client


async def new_source(services: Services, settings: Settings, url: str) -> int:
    async with services.db.begin() as session:
        return (await create_source(session, settings, SourceRequest(feed_url=url))).id


async def claimed(services: Services, settings: Settings) -> list[int]:
    async with services.db.begin() as session:
        return await claim_due_sources(session, settings)


async def schedule_of(services: Services, source_id: int) -> CrawlSchedule:
    async with services.db() as session:
        schedule = await session.get(CrawlSchedule, source_id)
        assert schedule is not None
        return schedule


async def source_of(services: Services, source_id: int) -> Source:
    async with services.db() as session:
        source = await session.get(Source, source_id)
        assert source is not None
        return source


async def fetch_log(services: Services, source_id: int) -> list[FetchLog]:
    async with services.db() as session:
        rows = await session.scalars(select(FetchLog).where(FetchLog.source_id == source_id).order_by(FetchLog.id))
        return list(rows)


async def test_a_json_feed_nested_past_any_stack_is_a_strike_and_its_replay_goes_on(
    services: Services, settings: Settings, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    # given a JSON Feed whose items are nested 100,000 deep (RecursionError in the job before: no fetch log, the claim
    # released by the sweeper due at once, fetched again every 30 s for ever)
    deep = ('{"version": "https://jsonfeed.org/version/1.1", "items": ' + "[" * 100_000 + "]" * 100_000 + "}").encode()
    feed_server.routes["/deep.json"] = Reply(200, deep, {"Content-Type": JSON_FEED})
    source_id = await new_source(services, settings, feed_server.url("/deep.json"))
    assert await claimed(services, settings) == [source_id]
    before = datetime.now(UTC)

    # when it is refreshed
    outcome = await refresh_source(services.engine, http, settings, source_id)

    # then the parse failed, a strike with its back-off, logged, the claim returned, and the body archived
    assert (outcome.status, outcome.error_class) == ("failed", "parse")
    schedule = await schedule_of(services, source_id)
    assert (schedule.status, schedule.consecutive_failures) == (ClaimStatus.PENDING, 1)
    assert schedule.next_crawl_at >= before + timedelta(minutes=2)
    assert [(row.error_class, row.status_code) for row in await fetch_log(services, source_id)] == [("parse", 200)]
    # and a replay of what the archive holds reports that body and goes on
    done = await replay(services.engine, settings, source_id, since=before - timedelta(hours=1))
    assert (done.fetches, done.parse_errors) == (1, 1)


async def test_three_404s_in_minutes_leave_a_source_active_and_404s_for_a_day_kill_it(
    services: Services, settings: Settings, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    # given a feed that answers 404 (a CMS deploy), refreshed three times in a row
    source_id = await new_source(services, settings, feed_server.url("/moving.xml"))
    first = datetime.now(UTC)
    outcomes = [await refresh_source(services.engine, http, settings, source_id) for _ in range(3)]

    # then the source is still active, its streak dated from the first 404
    assert {(o.status, o.error_class) for o in outcomes} == {("failed", "http_status")}
    assert (await source_of(services, source_id)).status == SourceStatus.ACTIVE
    schedule = await schedule_of(services, source_id)
    assert schedule.gone_streak == 3
    assert schedule.gone_since is not None
    assert first <= schedule.gone_since <= datetime.now(UTC)

    # when its 404s have gone on for a day
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).where(CrawlSchedule.source_id == source_id)
                              .values(gone_since=datetime.now(UTC) - timedelta(hours=24, minutes=1)))  # fmt: skip
    await refresh_source(services.engine, http, settings, source_id)

    # then it is dead
    assert (await source_of(services, source_id)).status == SourceStatus.DEAD


async def test_a_push_counts_its_articles_and_leaves_the_claim_and_the_failures_to_the_polls(
    services: Services, settings: Settings
) -> None:
    # given a source whose refresh is in flight, failing (404s, an open circuit) while following a redirect
    source_id = await new_source(services, settings, "http://127.0.0.1:9/pushed.xml")
    assert await claimed(services, settings) == [source_id]
    failing = {
        "consecutive_failures": 4, "gone_streak": 2, "gone_since": datetime.now(UTC) - timedelta(hours=3),
        "circuit": Circuit.OPEN, "redirect_url": "http://127.0.0.1:9/moved.xml", "redirect_streak": 2,
        "last_error": "http_status: HTTP 404", "next_crawl_at": datetime.now(UTC) + timedelta(minutes=16),
        "last_fetched_at": datetime.now(UTC) - timedelta(hours=1), "articles_per_hour": 0.0,
    }  # fmt: skip
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).where(CrawlSchedule.source_id == source_id).values(**failing))
    before = await schedule_of(services, source_id)

    # when its hub pushes three new entries, then a body that is no feed
    stored = await ingest_body(services.engine, settings, source_id, rss(items(3)), "application/rss+xml")
    unreadable = await ingest_body(services.engine, settings, source_id, b"<html><body>oops</body></html>", None)

    # then the entries are stored and counted towards the rate and the hours
    assert (stored.status, len(stored.new_article_ids)) == ("fetched", 3)
    assert (unreadable.status, unreadable.error_class) == ("failed", "parse")
    after = await schedule_of(services, source_id)
    assert after.articles_per_hour > 0
    assert sum(after.hourly_histogram) == sum(before.hourly_histogram) + 3
    # and the claim, the failures, the circuit, the redirect streak and the next poll are as they were
    kept = ("status", "last_triggered_at", "claimed_by", "next_crawl_at", "consecutive_failures", "gone_streak",
            "gone_since", "throttle_streak", "circuit", "redirect_url", "redirect_streak", "last_error")  # fmt: skip
    assert {name: getattr(after, name) for name in kept} == {name: getattr(before, name) for name in kept}
    assert after.status == ClaimStatus.IN_FLIGHT
    assert [row.error_class for row in await fetch_log(services, source_id)] == [None, "parse"]


async def claimed_behind(services: Services, settings: Settings, feed_server: FeedServer, http: httpx.AsyncClient,
                         path: str, back_off_s: float) -> tuple[str, int, Politeness]:  # fmt: skip
    """A new source of one article at `path`, claimed, on a site backed off for `back_off_s`: its URL, id and the
    site's politeness."""
    feed_server.routes[path] = Reply(200, rss(items(1)))
    url = feed_server.url(path)
    source_id = await new_source(services, settings, url)
    assert await claimed(services, settings) == [source_id]
    politeness = Politeness(services.redis, http, settings)
    await politeness.back_off(url, back_off_s)
    return url, source_id, politeness


async def test_a_politeness_wait_longer_than_its_claim_can_wait_returns_the_claim_and_takes_no_turn(
    services: Services, settings: Settings, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    # given a site of a request every 100 s (a Crawl-delay) backed off for 15 min, and one of its feeds claimed (its
    # turn was reserved 15 min off before, the job deferred past the claim's 10 min, superseded, the turn lost)
    slow = settings.model_copy(update={"politeness_requests_per_second": 0.01})
    url, source_id, politeness = await claimed_behind(services, slow, feed_server, http, "/slow.xml", 900)

    # when the claimed feed is refreshed
    outcome = await refresh_source(services.engine, http, slow, source_id, politeness=politeness)

    # then the claim is returned, the source due when the site's turn comes, and nothing was fetched
    assert outcome.status == "postponed"
    assert outcome.retry_in_s is not None
    assert outcome.retry_in_s > longest_claimed_wait_s(slow, None, datetime.now(UTC))
    schedule = await schedule_of(services, source_id)
    assert (schedule.status, schedule.claimed_by, schedule.consecutive_failures) == (ClaimStatus.PENDING, None, 0)
    assert schedule.next_crawl_at >= datetime.now(UTC) + timedelta(minutes=10)
    assert feed_server.hits.get("/slow.xml") is None
    assert await fetch_log(services, source_id) == []
    # and no turn was taken: the first after the back-off is still free (taken, the next would be 100 s later)
    assert await politeness.reserve(url, 0.01) <= 900


async def test_a_politeness_wait_the_claim_outlives_is_waited_with_the_turn_reserved(
    services: Services, settings: Settings, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    url, source_id, politeness = await claimed_behind(services, settings, feed_server, http, "/wait.xml", 120)

    outcome = await refresh_source(services.engine, http, settings, source_id, politeness=politeness)

    assert outcome.status == "deferred"
    assert outcome.retry_in_s is not None
    assert 0 < outcome.retry_in_s <= 120
    assert (await schedule_of(services, source_id)).status == ClaimStatus.IN_FLIGHT
    assert await politeness.reserve(url, 1.0) > outcome.retry_in_s  # the turn is the deferred job's


async def test_a_feed_moved_permanently_is_stored_at_its_normalized_url_and_never_onto_another_source(
    services: Services, settings: Settings, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    # given a feed that moved (301) to a URL spelled with credentials, tracking parameters and a fragment, and
    # another whose move leads to a third source's feed under another spelling
    feed_server.routes["/new.xml"] = Reply(200, rss(items(1)))
    port = feed_server.url("/").split(":")[-1].rstrip("/")
    feed_server.routes["/old.xml"] = Reply(301, b"", {
        "Location": f"http://editor:secret@127.0.0.1:{port}/new.xml?utm_source=rss&b=2&a=1#latest"})  # fmt: skip
    feed_server.routes["/taken.xml"] = Reply(200, rss(items(1)))
    feed_server.routes["/taken-old.xml"] = Reply(301, b"", {"Location": "/taken.xml?utm_source=x"})
    moved = await new_source(services, settings, feed_server.url("/old.xml"))
    holder = await new_source(services, settings, feed_server.url("/taken.xml"))
    stays = await new_source(services, settings, feed_server.url("/taken-old.xml"))

    # when each is fetched as often as a move takes
    for _ in range(settings.crawl_redirect_stable_after):
        for source_id in (moved, holder, stays):
            assert (await refresh_source(services.engine, http, settings, source_id)).status == "fetched"

    # then the moved one is stored at its URL normalized, and the other stays where it was: its target is taken
    assert (await source_of(services, moved)).feed_url == feed_server.url("/new.xml?a=1&b=2")
    assert (await source_of(services, stays)).feed_url == feed_server.url("/taken-old.xml")
    assert (await source_of(services, holder)).feed_url == feed_server.url("/taken.xml")


async def claimed_held(services: Services, settings: Settings, feed_server: FeedServer
                       ) -> tuple[int, threading.Event, threading.Event]:  # fmt: skip
    """A new source, claimed, last fetched an hour ago, whose feed of three entries answers only when let go: its id,
    the event its fetch sets when it asks, and the one that lets the feed answer."""
    asked, let_go = threading.Event(), threading.Event()

    def held(_: BaseHTTPRequestHandler) -> Reply:
        asked.set()
        let_go.wait(timeout=30)
        return Reply(200, rss(items(3)))

    feed_server.routes["/held.xml"] = held
    source_id = await new_source(services, settings, feed_server.url("/held.xml"))
    assert await claimed(services, settings) == [source_id]
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).where(CrawlSchedule.source_id == source_id)
                              .values(last_fetched_at=datetime.now(UTC) - timedelta(hours=1)))  # fmt: skip
    return source_id, asked, let_go


async def test_a_push_stored_while_a_refresh_fetches_keeps_its_counts_and_the_refresh_adds_its_own(
    services: Services, settings: Settings, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    # given a claimed source, last fetched an hour ago, whose feed answers only when let go
    source_id, asked, let_go = await claimed_held(services, settings, feed_server)
    before = await schedule_of(services, source_id)

    # when its refresh waits on the feed, its hub pushes two other entries, and then the feed answers
    refresh = asyncio.ensure_future(refresh_source(services.engine, http, settings, source_id))
    try:
        assert await asyncio.to_thread(asked.wait, 30)
        pushed = await ingest_body(services.engine, settings, source_id, rss(items(2, prefix="Pushed")), None)
        pushed_counts = await schedule_of(services, source_id)
    finally:
        let_go.set()
    polled = await refresh

    # then the source's hours count the push's two articles and the poll's three, its rate no lower than the push
    # left it, and the claim is the poll's to return
    assert (len(pushed.new_article_ids), polled.status, len(polled.new_article_ids)) == (2, "fetched", 3)
    after = await schedule_of(services, source_id)
    assert sum(after.hourly_histogram) == sum(before.hourly_histogram) + 2 + 3
    assert after.articles_per_hour >= pushed_counts.articles_per_hour > 0
    assert after.status == ClaimStatus.PENDING
    assert [row.items_new for row in await fetch_log(services, source_id)] == [2, 3]


PUSHES, WINDOW = 50, 10
PUSHED_ENTRIES = PUSHES + WINDOW - 1  # push k holds entries k to k + WINDOW - 1
STORE_WAIT_BOUND_S = 30.0  # loose: serialized on the source's rows, each store waits for those ahead of it


async def test_fifty_pushes_racing_a_refresh_that_moves_the_feed_are_all_stored_once_and_counted(
    services: Services, settings: Settings, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    """A flood of pushes (as the push job stores each one) while a refresh stores a fetch that moves the feed: the move
    changes the source row's unique feed URL, which waits for every transaction holding a key lock on it (an article
    insert's foreign key check), and pushes of one window of entries in another order insert the same articles in
    another order. Stored in that order (articles, then the schedule row), the transactions deadlocked and PostgreSQL
    aborted some of them."""
    # given a claimed source whose feed has moved for as many fetches as a move takes, but one
    entries = items(PUSHED_ENTRIES)
    feed_server.routes["/new.xml"] = Reply(200, rss(entries[:WINDOW]))
    feed_server.routes["/old.xml"] = Reply(301, b"", {"Location": feed_server.url("/new.xml")})
    source_id = await new_source(services, settings, feed_server.url("/old.xml"))
    assert await claimed(services, settings) == [source_id]
    moving = {"redirect_url": feed_server.url("/new.xml"), "redirect_streak": settings.crawl_redirect_stable_after - 1}
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).where(CrawlSchedule.source_id == source_id).values(**moving))
    before = await schedule_of(services, source_id)
    waits: list[float] = []

    async def push(k: int) -> str:
        window = entries[k : k + WINDOW]
        started = time.monotonic()
        try:
            return await store_push(services.engine, settings, source_id,
                                    Pushed(rss(window[:: -1 if k % 2 else 1]), None), nothing_follows)  # fmt: skip
        finally:
            waits.append(time.monotonic() - started)

    # when fifty pushes of overlapping windows, half of them in reverse order, are stored while the refresh stores
    async with asyncio.timeout(120):
        polled, *pushed = await asyncio.gather(refresh_source(services.engine, http, settings, source_id),
                                               *(push(k) for k in range(PUSHES)), return_exceptions=True)  # fmt: skip

    # then every store succeeded, each waiting a bounded time, and every entry is one article, counted once
    failed = [outcome for outcome in [polled, *pushed] if isinstance(outcome, BaseException)]
    assert failed == []
    assert not isinstance(polled, BaseException)
    assert polled.status == "fetched"
    assert set(pushed) == {"fetched"}
    assert max(waits) < STORE_WAIT_BOUND_S
    async with services.db() as session:
        stored = await session.scalar(select(func.count(func.distinct(Article.external_id)))
                                      .where(Article.source_id == source_id))  # fmt: skip
        assert stored == await session.scalar(select(func.count()).where(Article.source_id == source_id))
    assert stored == PUSHED_ENTRIES
    logged = await fetch_log(services, source_id)
    assert (len(logged), sum(row.items_new for row in logged)) == (PUSHES + 1, PUSHED_ENTRIES)
    after = await schedule_of(services, source_id)
    assert sum(after.hourly_histogram) == sum(before.hourly_histogram) + PUSHED_ENTRIES
    # and the move, and the claim's return, are the refresh's
    assert (await source_of(services, source_id)).feed_url == feed_server.url("/new.xml")
    assert (after.status, after.redirect_streak) == (ClaimStatus.PENDING, 0)
    print(f"\n{PUSHES} pushes and a refresh stored at once: the longest store took {max(waits):.2f} s")


async def nothing_follows(source_id: int, outcome: object) -> None:
    pass
