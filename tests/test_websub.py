"""WebSub against a real hub process on loopback: discovery, verified subscription, signed pushes, renewal."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import subprocess
import sys
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import httpx
import pytest
from arq.connections import ArqRedis
from sqlalchemy import func, select, update

from app.archive.models import ArchivedFetch
from app.articles.models import Article
from app.queue_names import INGEST_PUSH
from app.services import Services
from app.settings import Settings
from app.sources.models import CrawlSchedule, FetchLog, Source
from app.websub import pushes
from tests.conftest import REPO, GraphQLClient
from tests.feeds import FeedServer, Reply, items
from tests.newsroom import administrator
from tests.test_stranded_work import metric

Crawl = Callable[..., Coroutine[Any, Any, int]]


@pytest.fixture
def hub() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "websub_hub.py")], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    yield f"http://127.0.0.1:{port}/"
    process.terminate()
    process.wait(10)


@pytest.fixture
def public_url(settings: Settings, api_url: str) -> Iterator[str]:
    settings.public_url = api_url  # hubs reach this API's /websub/<token> here
    yield api_url
    settings.public_url = None


def hub_feed(feed_url: str, hub_url: str, count: int, start: int = 0) -> bytes:
    entries = "".join(
        f"<item><title>{i.title}</title><link>{i.link}</link><guid>{i.guid}</guid></item>"
        for i in items(count, prefix="Pushed", start=start)
    )
    return (
        '<?xml version="1.0"?><rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel>'
        f'<title>Pushed Wire</title><link>https://example.org/</link><atom:link rel="hub" href="{hub_url}"/>'
        f'<atom:link rel="self" href="{feed_url}"/>{entries}</channel></rss>'
    ).encode()


async def hub_state(hub_url: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as client:
        state: dict[str, Any] = (await client.get(hub_url)).json()
        return state


async def wait_for(check: Callable[[], Coroutine[Any, Any, bool]], seconds: float = 15) -> None:
    for _ in range(int(seconds * 10)):
        if await check():
            return
        await asyncio.sleep(0.1)  # the API answering the hub runs in this event loop
    raise AssertionError("condition not met in time")


async def source_row(services: Services) -> Source:
    async with services.db() as session:
        source = await session.scalar(select(Source))
        assert source is not None
        return source


async def article_count(services: Services) -> int:
    async with services.db() as session:
        return int(await session.scalar(select(func.count()).select_from(Article)) or 0)


class Subscription(NamedTuple):
    source: Source
    feed_url: str
    callback: str  # where the hub delivers pushes and asks us to confirm intent


@pytest.fixture
async def subscribed(gql: GraphQLClient, feed_server: FeedServer, hub: str, public_url: str, crawl: Crawl,
                     services: Services) -> Subscription:  # fmt: skip
    """A source whose feed (two items) names `hub`: added, crawled once, and its subscription verified by the hub."""
    feed_url = feed_server.url("/pushed.xml")
    feed_server.routes["/pushed.xml"] = Reply(200, hub_feed(feed_url, hub, 2))
    await (await administrator(gql, services)).run("SourceCreate", input={"feedUrl": feed_url})
    await crawl()  # fetch, discover the hub, subscribe

    async def verified() -> bool:
        return (await source_row(services)).websub_state == "subscribed"

    await wait_for(verified)
    source = await source_row(services)
    return Subscription(source, feed_url, f"{public_url}/websub/{source.websub_token}")


async def test_a_discovered_hub_is_subscribed_and_its_pushes_ingested(
    subscribed: Subscription, feed_server: FeedServer, hub: str, crawl: Crawl, services: Services, settings: Settings
) -> None:
    source, feed_url, callback = subscribed
    assert (source.websub_hub, source.websub_topic) == (hub, feed_url)
    assert source.websub_lease_expires_at is not None
    assert source.websub_lease_expires_at > datetime.now(UTC) + timedelta(days=9)
    subscriptions = (await hub_state(hub))["subscriptions"]
    assert [s["callback"] for s in subscriptions] == [callback]
    assert await article_count(services) == 2

    feed_server.routes["/pushed.xml"] = Reply(200, hub_feed(feed_url, hub, 3, start=2))  # three new entries
    async with httpx.AsyncClient(timeout=30) as client:
        publish = asyncio.ensure_future(client.post(hub, data={"hub.mode": "publish", "hub.url": feed_url}))
        await wait_for(lambda: asyncio.sleep(0, publish.done()))
        assert (await publish).status_code == 204
    await crawl(tick=False)  # the ingest job the push enqueued
    assert await article_count(services) == 5
    async with services.db() as session:  # the hub announced new items: the source is crawled soon, and first
        pushed = await session.scalar(select(CrawlSchedule))
    assert pushed is not None
    assert pushed.priority == settings.crawl_priority_websub
    assert pushed.next_crawl_at <= datetime.now(UTC) + timedelta(seconds=source.min_interval_s)

    async with services.db.begin() as session:  # polled only as a safety net from now on
        await session.execute(update(CrawlSchedule).values(next_crawl_at=datetime.now(UTC) - timedelta(seconds=1)))
    await crawl()
    async with services.db() as session:
        schedule = await session.scalar(select(CrawlSchedule))
    assert schedule is not None
    assert schedule.next_crawl_at > datetime.now(UTC) + timedelta(hours=5)


async def test_pushes_must_be_signed_with_our_secret(
    subscribed: Subscription, hub: str, crawl: Crawl, services: Services, api_url: str
) -> None:
    source, feed_url, callback = subscribed
    body = hub_feed(feed_url, hub, 4, start=10)
    good = "sha256=" + hmac.new(str(source.websub_secret).encode(), body, hashlib.sha256).hexdigest()
    async with httpx.AsyncClient() as client:
        forged = await client.post(callback, content=body, headers={"X-Hub-Signature": "sha256=" + "0" * 64})
        unsigned = await client.post(callback, content=body)
        unknown = await client.post(f"{api_url}/websub/not-a-token", content=body, headers={"X-Hub-Signature": good})
        huge = await client.post(callback, content=b"x" * (3 * 1024 * 1024), headers={"X-Hub-Signature": good})
    assert (forged.status_code, unsigned.status_code, unknown.status_code, huge.status_code) == (202, 403, 404, 413)
    await crawl(tick=False)
    assert await article_count(services) == 2  # nothing of the forged or unsigned pushes was stored
    async with services.db() as session:
        classes = list(await session.scalars(select(FetchLog.error_class)))
    assert "push_bad_signature" in classes

    async with httpx.AsyncClient() as client:
        headers = {"X-Hub-Signature": good, "Content-Type": "application/rss+xml"}
        genuine = await client.post(callback, content=body, headers=headers)
    assert genuine.status_code == 202
    await crawl(tick=False)
    assert await article_count(services) == 6


async def test_intent_is_confirmed_only_for_what_we_asked(subscribed: Subscription, services: Services) -> None:
    _, feed_url, callback = subscribed
    async with httpx.AsyncClient() as client:
        wrong_topic = await client.get(callback, params={"hub.mode": "subscribe", "hub.topic": "http://evil.example/",
                                                         "hub.challenge": "x"})  # fmt: skip
        unsubscribe = await client.get(callback, params={"hub.mode": "unsubscribe", "hub.topic": feed_url,
                                                         "hub.challenge": "x"})  # fmt: skip
        renewal = await client.get(callback, params={"hub.mode": "subscribe", "hub.topic": feed_url,
                                                     "hub.challenge": "abc", "hub.lease_seconds": "3600"})  # fmt: skip
    assert (wrong_topic.status_code, unsubscribe.status_code) == (404, 404)
    assert (renewal.status_code, renewal.text) == (200, "abc")
    assert (await source_row(services)).websub_state == "subscribed"


async def test_a_hostile_callback_is_refused_not_a_crash(subscribed: Subscription, services: Services) -> None:
    _, feed_url, callback = subscribed
    base = callback.rsplit("/", 1)[0]
    async with httpx.AsyncClient() as client:
        for token in ("%00", "a%00b", "x" * 1000):
            intent = await client.get(f"{base}/{token}", params={"hub.mode": "subscribe", "hub.topic": feed_url})
            push = await client.post(f"{base}/{token}", content=b"<rss/>", headers={"X-Hub-Signature": "sha1=00"})
            assert (intent.status_code, push.status_code) == (404, 404), token
        for lease in ("\u00b2", "9" * 5000, "-1"):  # a superscript two passes str.isdigit(); 5,000 digits, int()
            asked = {"hub.mode": "subscribe", "hub.topic": feed_url, "hub.challenge": "abc", "hub.lease_seconds": lease}
            renewal = await client.get(callback, params=asked)
            assert (renewal.status_code, renewal.text) == (200, "abc"), lease  # our own lease applies


@pytest.mark.usefixtures("subscribed")
async def test_leases_are_renewed_before_they_end(hub: str, crawl: Crawl, services: Services, arq_redis: Any) -> None:
    from jobs.websub import websub_renew

    async with services.db.begin() as session:
        await session.execute(update(Source).values(websub_lease_expires_at=datetime.now(UTC) + timedelta(hours=2)))
    assert await websub_renew({"services": services, "redis": arq_redis}) == 1
    await crawl(tick=False)

    async def renewed() -> bool:
        row = await source_row(services)
        return row.websub_lease_expires_at is not None and row.websub_lease_expires_at > datetime.now(UTC) + timedelta(
            days=9
        )

    await wait_for(renewed)
    state = await hub_state(hub)
    subscribes = [r for r in state["requests"] if r.get("hub.mode") == "subscribe"]
    assert len(subscribes) == 2
    assert subscribes[0]["hub.callback"] == subscribes[1]["hub.callback"]  # the same subscription, renewed
    assert len(state["subscriptions"]) == 1


PUSH_FLOOD, ARCHIVE_CAP = 600, 40


async def test_a_push_flood_stores_every_entry_raises_its_source_once_and_fills_no_archive(
    subscribed: Subscription, hub: str, crawl: Crawl, services: Services, settings: Settings
) -> None:
    """Given a subscribed source, when its hub pushes 600 signed documents in a burst (each with two new entries),
    then every entry is stored, the source's crawl priority was raised by the first push only (the window), and its
    archive holds at most the hour's cap of bodies, the rest counted as skipped."""
    source, feed_url, callback = subscribed
    archived_before = await _archived(services, source.id)
    settings.fetch_archive_per_source_per_hour = ARCHIVE_CAP
    settings.websub_pending_pushes = PUSH_FLOOD  # every push held: what the archive keeps is the question here
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            for k in range(PUSH_FLOOD):
                body = hub_feed(feed_url, hub, 2, start=100 + 2 * k)
                signature = "sha256=" + hmac.new(str(source.websub_secret).encode(), body, hashlib.sha256).hexdigest()
                pushed = await client.post(callback, content=body, headers={
                    "X-Hub-Signature": signature, "Content-Type": "application/rss+xml"})  # fmt: skip
                assert pushed.status_code == 202
        await crawl(tick=False)  # the ingest jobs the pushes enqueued
    finally:
        settings.fetch_archive_per_source_per_hour = Settings.model_fields["fetch_archive_per_source_per_hour"].default
        settings.websub_pending_pushes = Settings.model_fields["websub_pending_pushes"].default
    assert await article_count(services) == 2 + 2 * PUSH_FLOOD  # nothing pushed was lost
    async with services.db() as session:
        schedule = await session.get(CrawlSchedule, source.id)
        logged = await session.scalar(select(func.count()).select_from(FetchLog).where(FetchLog.source_id == source.id))
    assert schedule is not None
    assert schedule.websub_raised_at is not None
    assert schedule.priority_at == schedule.websub_raised_at  # no later push raised it again
    assert logged == 1 + PUSH_FLOOD  # every push logged as a fetch is
    assert await _archived(services, source.id) == ARCHIVE_CAP
    assert archived_before == 1


async def _archived(services: Services, source_id: int) -> int:
    async with services.db() as session:
        query = select(func.count()).select_from(ArchivedFetch).where(ArchivedFetch.source_id == source_id)
        return int(await session.scalar(query) or 0)


FLOOD, WAITING_MOST, AT_ONCE = 300, 20, 20


async def test_a_push_flood_past_its_sources_list_is_refused_with_503_and_leaves_one_job(
    subscribed: Subscription, hub: str, crawl: Crawl, services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    """Given a subscribed source whose list holds at most 20 pushes, when its hub pushes 300 signed documents
    (20 at a time) with no worker running, then 20 are accepted and held for one ingest job, the 280 others are
    refused with 503 and Retry-After and counted; then one drain stores the 20 and leaves nothing waiting."""
    source, feed_url, callback = subscribed
    secret = str(source.websub_secret).encode()
    refused_before = metric("newsagg_websub_pushes_refused_total")
    settings.websub_pending_pushes = WAITING_MOST
    try:
        statuses = await _flood(callback, secret, [hub_feed(feed_url, hub, 1, start=100 + k) for k in range(FLOOD)])
        jobs = [
            job for job in await arq_redis.queued_jobs(queue_name=settings.queue_name) if job.function == INGEST_PUSH
        ]
        waiting = await pushes.waiting(services.redis, source.id)
        await crawl(tick=False)
    finally:
        settings.websub_pending_pushes = Settings.model_fields["websub_pending_pushes"].default
    assert (statuses.count(202), statuses.count(503), len(statuses)) == (WAITING_MOST, FLOOD - WAITING_MOST, FLOOD)
    assert (len(jobs), waiting) == (1, WAITING_MOST)
    assert metric("newsagg_websub_pushes_refused_total") == refused_before + FLOOD - WAITING_MOST
    assert await article_count(services) == 2 + WAITING_MOST
    assert await pushes.waiting(services.redis, source.id) == 0
    assert await services.redis.exists(f"{pushes.PREFIX}{source.id}:pending") == 0  # the next push enqueues a job


async def _flood(callback: str, secret: bytes, bodies: list[bytes]) -> list[int]:
    """Each body pushed, signed, AT_ONCE at a time: the status of each."""
    gate = asyncio.Semaphore(AT_ONCE)
    limits = httpx.Limits(max_connections=AT_ONCE, max_keepalive_connections=AT_ONCE)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def push(body: bytes) -> int:
            signature = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
            async with gate:
                reply = await client.post(callback, content=body, headers={
                    "X-Hub-Signature": signature, "Content-Type": "application/rss+xml"})  # fmt: skip
            assert reply.status_code == 202 or reply.headers.get("retry-after"), reply.text
            return reply.status_code

        return list(await asyncio.gather(*(push(body) for body in bodies)))
