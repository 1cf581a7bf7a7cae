"""`notificationAdded` across PostgreSQL and Redis outages, over real WebSockets: subscriptions whose reads find
PostgreSQL gone wait it out and then deliver each notification once (the outage logged and counted once), and while
Redis is away one poll per API process, not one per subscriber, reads the notifications of every reader subscribed
to it and hands each reader their own.

PostgreSQL is reached through a TCP proxy the test cuts, Redis is a server of the test's own: nobody else is
touched."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import event, make_url, text

from app.notifications.router import POLL_SECONDS
from app.services import Services
from app.settings import Settings
from app.users.service import SESSION_PREFIX, digest
from tests.alerts import add_readers, until_subscribed
from tests.conftest import GraphQLClient, next_message, serve_api
from tests.newsroom import sign_up
from tests.test_ingest_outages import CutProxy
from tests.test_notification_outage import break_story, next_notification, subscribe_notifications
from tests.test_redis_outage import own_redis, services_on

OUTAGE_SECONDS = 10
READERS = 200


def outages() -> float:
    return REGISTRY.get_sample_value("newsagg_database_outages_total", {"part": "notifications"}) or 0.0


@contextlib.asynccontextmanager
async def through_a_proxy(settings: Settings) -> AsyncIterator[tuple[Services, CutProxy]]:
    """Services whose PostgreSQL is the test run's own behind a proxy that can be cut."""
    url = make_url(settings.database_url)
    proxy = CutProxy(url.port or 5432)
    await proxy.start()
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    opened = Services.open(settings.model_copy(update={"database_url": proxied}))
    try:
        yield opened, proxy
    finally:
        await opened.close()
        with contextlib.suppress(AssertionError, OSError):
            await proxy.cut()


async def test_subscriptions_wait_out_a_postgresql_outage_and_deliver_each_notification_once(
    services: Services, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    async with through_a_proxy(settings) as (api, proxy), serve_api(api.settings, api) as api_url:
        async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
            tokens = [await sign_up(GraphQLClient(http), f"reader{k}@example.com") for k in range(3)]
            for token in tokens:
                assert (await GraphQLClient(http).as_(token).run("AlertRulesSet", input={}))["alertRulesSet"]
        clients = [await subscribe_notifications(api_url, token) for token in tokens]
        await until_subscribed(api, len(clients))
        await break_story(services, 1)  # written and announced directly, not through the API's proxy
        assert [(await next_notification(ws))["title"] for ws in clients] == ["Story 1"] * 3
        before = outages()
        caplog.set_level(logging.INFO, logger="app.resilience.outage")

        # when the API loses PostgreSQL for ten seconds, and stories break meanwhile (the announcements wake every
        # subscription, whose reads fail) and as it comes back
        await proxy.cut()
        started = time.monotonic()
        await break_story(services, 2)
        await break_story(services, 3)
        await until(lambda: outages() > before)
        await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - started)))
        await break_story(services, 4)
        await proxy.start()

        # then each subscriber gets the three, in order, once (the next one is the live one), and the outage was
        # logged and counted once, though three subscriptions met it
        for ws in clients:
            assert [(await next_notification(ws))["title"] for _ in range(3)] == ["Story 2", "Story 3", "Story 4"]
        await break_story(services, 5)
        assert [(await next_notification(ws))["title"] for ws in clients] == ["Story 5"] * 3
        assert outages() == before + 1
        said = [r.getMessage() for r in caplog.records if r.name == "app.resilience.outage"]
        assert len(said) == 2, said
        assert said[0].startswith("notifications: PostgreSQL unreachable"), said
        assert said[1].startswith("notifications: PostgreSQL back after"), said
        for ws in clients:
            await ws.close()


async def signed_in_readers(services: Services, count: int) -> dict[int, str]:
    """`count` readers alerted of every breaking story, each with a bearer token of their own."""
    await add_readers(services, count)
    async with services.engine.begin() as connection:
        ids = list(await connection.scalars(text("SELECT id FROM users WHERE email LIKE 'bulk%' ORDER BY id")))
        tokens = {user_id: SESSION_PREFIX + secrets.token_urlsafe(24) for user_id in ids}
        await connection.execute(text("INSERT INTO user_sessions (user_id, token_hash, expires_at) "
                                      "VALUES (:user_id, :token_hash, now() + interval '1 day')"),
                                 [{"user_id": u, "token_hash": digest(t)} for u, t in tokens.items()])  # fmt: skip
    return tokens


async def write_one_each(services: Services, number: int) -> None:
    """A notification for every reader, naming the reader, written as another process writes it (no announcement)."""
    async with services.engine.begin() as connection:
        await connection.execute(text("INSERT INTO notifications (user_id, event_id, kind, priority, story_id, title) "
                                      "SELECT id, :event, 'breaking', 'urgent', :story, 'For reader ' || id || :number "
                                      "FROM users WHERE email LIKE 'bulk%'"),
                                 {"event": 10**6 + number, "story": number, "number": f" #{number}"})  # fmt: skip


async def subscribed(api_url: str, tokens: dict[int, str]) -> dict[int, Any]:
    """A notificationAdded WebSocket for each reader, opened a few dozen at a time."""
    sockets: dict[int, Any] = {}
    readers = list(tokens)
    for first in range(0, len(readers), 25):
        batch = readers[first : first + 25]
        opened = await asyncio.gather(*(subscribe_notifications(api_url, tokens[u]) for u in batch))
        sockets.update(zip(batch, opened, strict=True))
    return sockets


async def collect(ws: Any, titles: list[str]) -> None:
    try:
        while True:
            message = await next_message(ws, seconds=None)  # the caller bounds its own wait
            assert message["type"] == "next", message
            titles.append(message["payload"]["data"]["notificationAdded"]["title"])
    finally:
        await ws.close()


async def until(condition: Callable[[], bool], seconds: float = 30) -> None:
    async with asyncio.timeout(seconds):
        while True:
            if condition():
                return
            await asyncio.sleep(0.05)


async def until_each_has(received: dict[int, list[str]], count: int) -> None:
    await until(lambda: all(len(titles) >= count for titles in received.values()), seconds=60)


@contextlib.contextmanager
def reads_of_many_readers(services: Services) -> Iterator[list[int]]:
    """How many readers each read of new notifications named (one entry a statement) while inside."""
    readers: list[int] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if "unnest" in statement and "notifications" in statement:
            readers.append(len(next(p for p in parameters if isinstance(p, list))))

    event.listen(services.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield readers
    finally:
        event.remove(services.engine.sync_engine, "before_cursor_execute", record)


async def test_while_redis_is_away_one_poll_per_process_reads_for_200_readers_and_each_gets_their_own(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    with own_redis(tmp_path / "redis") as server:
        async with services_on(settings, server) as own, serve_api(own.settings, own) as api_url:
            tokens = await signed_in_readers(own, READERS)
            received: dict[int, list[str]] = {user_id: [] for user_id in tokens}
            sockets = await subscribed(api_url, tokens)
            clients = [asyncio.create_task(collect(ws, received[u])) for u, ws in sockets.items()]
            await until_subscribed(own, READERS, seconds=60)

            # when Redis stops and every reader gets two notifications of their own, written by another process
            server.stop()
            await until(lambda: not own.broadcaster.connected)
            with reads_of_many_readers(own) as reads:
                started = time.monotonic()
                for number in (1, 2):
                    await write_one_each(services, number)
                await until_each_has(received, 2)
                elapsed = time.monotonic() - started

            # then each got their own two, in order; and the table was read by the process's one poll, each read
            # naming all 200 readers: the reads are bounded by the time the outage lasted, not by the subscribers
            assert all(titles == [f"For reader {u} #1", f"For reader {u} #2"] for u, titles in received.items())
            assert reads, "no read while Redis was away"
            assert set(reads) == {READERS}, reads
            assert len(reads) <= elapsed / (0.75 * POLL_SECONDS) + 3 < READERS, (len(reads), elapsed)
            print(f"\n{len(reads)} read(s) of {READERS} readers' notifications in {elapsed:.1f} s of Redis outage")

            # and once Redis is back, live delivery resumes, nothing twice
            reconnects = own.broadcaster.reconnects
            server.start()
            await until(lambda: own.broadcaster.reconnects > reconnects)
            for story in (1, 2):
                await break_story(own, story)
                await until_each_has(received, 2 + story)
            assert all(titles[2:] == ["Story 1", "Story 2"] for titles in received.values())
            for client in clients:
                client.cancel()
            await asyncio.gather(*clients, return_exceptions=True)
