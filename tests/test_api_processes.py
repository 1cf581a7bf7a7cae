"""The API as real processes: killed with SIGKILL in the middle of a breaking-news fan-out (its clients reconnect and
catch up with `breakingEvents(after:)`: every event once, in order), and two of them side by side (subscribe through
one, add the source through the other, a worker ingests: every article reaches every subscriber once).

Clients here behave as the BreakingNews document tells one to: keep the last cursor; after a reconnect, fill the gap
between it and the first live event with `breakingEvents(after:)`. A new client fills from the beginning, so a
subscription that attaches late misses nothing either."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import websockets

from app.ingest.events import ARTICLES_ADDED
from app.outbox.relay import relay
from app.realtime.broadcast import channel_of
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from app.stories.velocity import BREAKING_TOPIC
from tests.conftest import GraphQLClient, document, next_message, subscribe_message, ws_connection
from tests.feeds import FeedServer, Reply, items, rss
from tests.newsroom import add_breaking_event
from tests.processes import deployment_env, parse, running, total

CLIENTS = 20
BEFORE_KILL, AFTER_RESTART = 60, 40  # events published until the API is back, then after
KILL_AT = 15  # the API is killed once a client has this many


@dataclass
class Follower:
    """What one client has seen: (cursor, title) in arrival order, and how it got them."""

    events: list[tuple[str, str]] = field(default_factory=list)
    duplicates: int = 0  # events seen twice (dropped by cursor)
    caught_up: int = 0  # events that came from breakingEvents(after:) rather than live
    reconnects: int = 0

    def add(self, cursor: str, title: str) -> None:
        if any(cursor == seen for seen, _ in self.events):
            self.duplicates += 1
        else:
            self.events.append((cursor, title))

    async def fill_gap(self, http: httpx.AsyncClient, until: str) -> None:
        """The events after the last one seen (all of them for a new client), up to the live event `until`."""
        api, after = GraphQLClient(http), self.events[-1][0] if self.events else None
        while True:
            page = (await api.run("BreakingEvents", first=50, after=after))["breakingEvents"]
            for edge in page["edges"]:
                if edge["cursor"] == until:
                    return
                self.add(edge["cursor"], edge["node"]["title"])
                self.caught_up += 1
            if not page["pageInfo"]["hasNextPage"]:
                return
            after = page["pageInfo"]["endCursor"]


async def follow(api_url: str, follower: Follower) -> None:
    """Subscribed to breakingNews for good: reconnects whenever the connection is lost, and catches up."""
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        while True:
            try:
                async with ws_connection(api_url) as ws:
                    await ws.send(subscribe_message("1", document("BreakingNews")))
                    gap_filled = False
                    while True:
                        message = await next_message(ws, seconds=None)
                        assert message["type"] == "next", message
                        event = message["payload"]["data"]["breakingNews"]
                        if not gap_filled:
                            await follower.fill_gap(http, event["cursor"])
                            gap_filled = True
                        follower.add(event["cursor"], event["title"])
            except (OSError, websockets.exceptions.WebSocketException, httpx.TransportError):
                follower.reconnects += 1
                await asyncio.sleep(0.2)


async def publish(services: Services, numbers: range) -> None:
    """Breaking events, each relayed to Redis as soon as it is written (as the worker's relay does, only faster)."""
    for number in numbers:
        await add_breaking_event(services, number)
        await relay(services.engine, services.redis, [BREAKING_TOPIC])
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def clients() -> AsyncIterator[list[asyncio.Task[None]]]:
    """The clients' tasks a test starts, cancelled when it leaves, however it leaves."""
    tasks: list[asyncio.Task[None]] = []
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def until(condition: Any, seconds: float, what: str) -> None:
    try:
        async with asyncio.timeout(seconds):
            while True:
                if condition():
                    return
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"not within {seconds:.0f} s: {what}") from None


async def test_clients_of_an_api_killed_mid_fan_out_catch_up_every_event_once_in_order(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    env, port, log = deployment_env(settings, tmp_path / "home"), free_port(), tmp_path / "api.log"
    followers = [Follower() for _ in range(CLIENTS)]
    expected = [f"Story {k}" for k in range(1, BEFORE_KILL + AFTER_RESTART + 1)]
    async with clients() as tasks:
        with running(env, "api", log=log, port=port) as first:
            tasks.extend(asyncio.create_task(follow(first.url, f)) for f in followers)
            publisher = asyncio.create_task(publish(services, range(1, BEFORE_KILL + 1)))
            # when the API is killed while it pushes events to its clients
            await until(lambda: max(len(f.events) for f in followers) >= KILL_AT, 60, f"a client with {KILL_AT}")
            first.process.kill()
            first.process.wait(10)
            delivered_at_kill = sorted(len(f.events) for f in followers)
            assert not publisher.done()  # mid fan-out: events kept coming while it was dead
            await publisher
        # then it is started again on the same address, and more events follow
        with running(env, "api", log=log, port=port):
            restarted = time.monotonic()
            await publish(services, range(BEFORE_KILL + 1, BEFORE_KILL + AFTER_RESTART + 1))
            await until(lambda: all(len(f.events) >= len(expected) for f in followers), 60, "every event everywhere")
            recovered = time.monotonic() - restarted
    print(f"\nAPI killed mid fan-out (clients holding {delivered_at_kill[0]}-{delivered_at_kill[-1]} of "
          f"{len(expected)}): {sum(len(f.events) for f in followers)} of {CLIENTS * len(expected)} events delivered "
          f"to {CLIENTS} clients, {sum(f.caught_up for f in followers)} through breakingEvents(after:), "
          f"{sum(f.duplicates for f in followers)} duplicates dropped, all in {recovered:.1f} s from the "
          f"restart")  # fmt: skip
    assert all(f.reconnects >= 1 for f in followers)
    assert [[title for _, title in f.events] for f in followers] == [expected] * CLIENTS
    assert sum(f.caught_up for f in followers) > 0


SPLIT = (6, 4)  # subscribers on the first API, on the second
ARTICLES = 30


async def collect_articles(api_url: str, titles: list[str]) -> None:
    async with ws_connection(api_url) as ws:
        await ws.send(subscribe_message("1", document("ArticleAdded")))
        while True:
            message = await next_message(ws, seconds=None)
            assert message["type"] == "next", message
            titles.append(message["payload"]["data"]["articleAdded"]["title"])


async def operations(api_url: str) -> float:
    """Subscriptions running on every API process of the deployment (/metrics sums them)."""
    async with httpx.AsyncClient(base_url=api_url) as http:
        return total(parse((await http.get("/metrics")).text), "newsagg_ws_operations")


async def test_two_api_processes_every_article_reaches_each_subscriber_once(
    services: Services, settings: Settings, feed_server: FeedServer, tmp_path: Path
) -> None:
    feed_server.routes["/wire.xml"] = Reply(200, rss(items(ARTICLES, prefix="Wire")), {"Content-Type": "text/xml"})
    env = deployment_env(settings, tmp_path / "home", NEWSAGG_OPEN_SOURCE_ADMIN="true", NEWSAGG_CRAWL_TICK_SECONDS="1")
    received: list[list[str]] = [[] for _ in range(sum(SPLIT))]
    channel = channel_of(services.redis, ARTICLES_ADDED).encode()
    # this session's own API (other tests' `api_url`) may hold the channel too: the two processes add theirs
    already = dict(await services.redis.pubsub_numsub(channel)).get(channel, 0)
    with contextlib.ExitStack() as stack:
        one = stack.enter_context(running(env, "api", log=tmp_path / "one.log"))
        two = stack.enter_context(running(env, "api", log=tmp_path / "two.log"))
        async with clients() as tasks:
            urls = [one.url] * SPLIT[0] + [two.url] * SPLIT[1]
            tasks.extend(asyncio.create_task(collect_articles(u, t)) for u, t in zip(urls, received, strict=True))
            async with asyncio.timeout(30):  # both processes hold the channel, every subscription runs
                while True:
                    held = dict(await services.redis.pubsub_numsub(channel)).get(channel, 0)
                    if held >= already + 2 and await operations(one.url) >= sum(SPLIT):
                        break
                    await asyncio.sleep(0.1)
            # when the source is added through the second API and a worker ingests it
            async with httpx.AsyncClient(base_url=two.url, timeout=30) as http:
                created = await GraphQLClient(http).run("SourceCreate", input={"feedUrl": feed_server.url("/wire.xml")})
            assert created["sourceCreate"]["errors"] == []
            started = time.monotonic()
            stack.enter_context(running(env, "worker", log=tmp_path / "worker.log"))
            await until(lambda: all(len(titles) >= ARTICLES for titles in received), 90, "every article everywhere")
            await asyncio.sleep(1)  # long enough for a duplicate to show up, if one were coming
            seconds = time.monotonic() - started
    print(f"\ntwo API processes: {sum(len(t) for t in received)} of {ARTICLES * sum(SPLIT)} articles delivered to "
          f"{sum(SPLIT)} subscribers ({SPLIT[0]} on one, {SPLIT[1]} on the other), {seconds:.1f} s from the worker's "
          f"start")  # fmt: skip
    assert [sorted(titles) for titles in received] == [sorted(f"Wire {k}" for k in range(ARTICLES))] * sum(SPLIT)
