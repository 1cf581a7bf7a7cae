"""Redis stopped and restarted under a running API and worker: queries are answered (degraded, counted), live
subscribers get every event (the missed ones from the outbox), once and in order, and the worker carries on.

Each test runs a Redis server of its own on a free port, so stopping it touches nobody else."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import redis
from arq.worker import Retry
from prometheus_client import REGISTRY
from sqlalchemy import text

from app.articles.repository import NewArticle, insert_new
from app.ingest.events import ARTICLES_ADDED, announce_articles_added
from app.outbox.relay import relay_all
from app.runtime.embedded import EmbeddedRedis
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from jobs.loop import retried_on_redis
from tests.conftest import GraphQLClient, document, serve_api, subscribe_ws, until_listening
from tests.processes import deployment_env, running

SUBSCRIBERS = 5


@contextlib.contextmanager
def own_redis(folder: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.asynccontextmanager
async def services_on(settings: Settings, server: EmbeddedRedis) -> AsyncIterator[Services]:
    opened = Services.open(settings.model_copy(update={"redis_url": server.url()}))
    try:
        yield opened
    finally:
        await opened.close()


async def stored_articles(services: Services, settings: Settings, count: int) -> tuple[int, list[int]]:
    """A source and `count` articles of it (ids ascending)."""
    async with services.db.begin() as session:
        source = await create_source(session, settings, SourceRequest(feed_url="http://127.0.0.1:9/wire", name="Wire"))
        rows = [NewArticle(source_id=source.id, external_id=str(k), url=f"https://wire.example/{k}", title=f"Wire {k}",
                           summary="", author=None, published_at=datetime(2026, 11, 1, tzinfo=UTC), content_hash=k)
                for k in range(count)]  # fmt: skip
        return source.id, [a.id for a in await insert_new(session, rows)]


async def announce(services: Services, source_id: int, article_ids: list[int]) -> None:
    """As ingest does: one event per stored article, in the outbox, in the articles' transaction."""
    for article_id in article_ids:
        async with services.engine.begin() as connection:
            await announce_articles_added(connection, source_id, [article_id])


async def collect(api_url: str, titles: list[str]) -> None:
    async for message in subscribe_ws(api_url, document("ArticleAdded"), {}):
        assert message["type"] == "next", message
        titles.append(message["payload"]["data"]["articleAdded"]["title"])


async def until_received(received: list[list[str]], count: int) -> None:
    async with asyncio.timeout(60):
        while True:
            if all(len(titles) >= count for titles in received):
                return
            await asyncio.sleep(0.05)


def caught_up() -> float:
    return REGISTRY.get_sample_value("newsagg_broadcast_caught_up_events_total", {"topic": ARTICLES_ADDED}) or 0.0


def degraded(part: str) -> float:
    return REGISTRY.get_sample_value("newsagg_redis_degraded_total", {"part": part}) or 0.0


async def test_subscribers_get_every_event_once_in_order_across_a_redis_restart(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    caught_up_before = caught_up()
    with own_redis(tmp_path / "redis") as server:
        async with services_on(settings, server) as own, serve_api(own.settings, own) as api_url:
            source_id, ids = await stored_articles(own, own.settings, 9)
            expected = [f"Wire {k}" for k in range(9)]
            received: list[list[str]] = [[] for _ in range(SUBSCRIBERS)]
            clients = [asyncio.create_task(collect(api_url, titles)) for titles in received]
            await until_listening(own, ARTICLES_ADDED, count=SUBSCRIBERS)
            # given three events pushed live
            await announce(own, source_id, ids[:3])
            assert await relay_all(own.engine, own.redis, (ARTICLES_ADDED,)) == 3
            await until_received(received, 3)

            # when Redis stops, three more are stored (the relay keeps them) and the API is queried
            server.stop()
            await announce(own, source_id, ids[3:6])
            assert await relay_all(own.engine, own.redis, (ARTICLES_ADDED,)) == 0
            cache_failures = degraded("cache")
            async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
                api = GraphQLClient(http)
                assert len((await api.run("Articles", first=20))["articles"]["edges"]) == 9
                trending = await api.post(document("Trending"))  # ranked in Redis: a typed error, not a crash
                assert [e["extensions"]["code"] for e in trending["errors"]] == ["TRENDING_UNAVAILABLE"]
                health = await http.get("/healthz")  # still serving: a balancer keeps it in rotation
                assert (health.status_code, health.json()["degraded"]) == (200, ["redis"]), health.text
                assert health.json()["redis"]["ok"] is False
            assert degraded("cache") > cache_failures  # answered without the cache, and counted
            assert degraded("broadcast") > 0

            # then Redis comes back: the API catches up from the outbox before any relay has run
            server.start()
            restarted = time.monotonic()
            await until_received(received, 6)
            recovered = time.monotonic() - restarted
            await until_listening(own, ARTICLES_ADDED, count=SUBSCRIBERS)
            # the relay now publishes the three it kept (already delivered: skipped) and three new ones
            await announce(own, source_id, ids[6:])
            assert await relay_all(own.engine, own.redis, (ARTICLES_ADDED,)) == 6
            await until_received(received, 9)
            for client in clients:
                client.cancel()
            await asyncio.gather(*clients, return_exceptions=True)
    print(f"\nRedis restarted: {sum(map(len, received))} of {9 * SUBSCRIBERS} events delivered to {SUBSCRIBERS} "
          f"subscribers, the 3 missed from the outbox {recovered:.1f} s after Redis returned; "
          f"{degraded('cache') - cache_failures:.0f} cache reads answered without Redis")  # fmt: skip
    assert received == [expected] * SUBSCRIBERS
    assert caught_up() - caught_up_before == 3  # the three stored during the outage came from the outbox


class Proxy:
    """A TCP forwarder to `port` that can freeze: it then forwards nothing and closes nothing, as a hung Redis does."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._forward, "127.0.0.1", 0)
        return f"redis://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/0"

    async def _forward(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        await self.flowing.wait()
        server_in, server_out = await asyncio.open_connection("127.0.0.1", self.port)
        await asyncio.gather(self._pipe(client_in, server_out), self._pipe(server_in, client_out))

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                await self.flowing.wait()
                sink.write(data)
                await sink.drain()
        sink.close()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()


def silences() -> float:
    return REGISTRY.get_sample_value("newsagg_broadcast_silences_total") or 0.0


async def until_silence_noticed(before: float) -> None:
    async with asyncio.timeout(60):
        while True:
            if silences() > before:
                return
            await asyncio.sleep(0.05)


async def test_a_redis_that_hangs_is_noticed_and_subscribers_catch_up_in_order(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    silences_before, caught_up_before = silences(), caught_up()
    with own_redis(tmp_path / "redis") as server:
        proxy = Proxy(server.port)
        hung = settings.model_copy(update={"broadcast_liveness_seconds": 0.5})
        async with services_on(hung, server) as direct:  # the relay's own way to Redis, around the proxy
            opened = Services.open(hung.model_copy(update={"redis_url": await proxy.start()}))
            async with serve_api(opened.settings, opened) as api_url:
                source_id, ids = await stored_articles(opened, opened.settings, 9)
                received: list[list[str]] = [[] for _ in range(SUBSCRIBERS)]
                clients = [asyncio.create_task(collect(api_url, titles)) for titles in received]
                try:
                    await until_listening(opened, ARTICLES_ADDED, count=SUBSCRIBERS)
                    await announce(opened, source_id, ids[:3])
                    assert await relay_all(direct.engine, direct.redis, (ARTICLES_ADDED,)) == 3
                    await until_received(received, 3)

                    # when Redis hangs (nothing answered, nothing closed) while three events are published
                    proxy.flowing.clear()
                    await announce(opened, source_id, ids[3:6])
                    assert await relay_all(direct.engine, direct.redis, (ARTICLES_ADDED,)) == 3
                    await until_silence_noticed(silences_before)
                    assert all(len(titles) == 3 for titles in received)

                    # then Redis answers again: the missed three come from the outbox, then live ones
                    proxy.flowing.set()
                    await until_received(received, 6)
                    await until_listening(opened, ARTICLES_ADDED, count=SUBSCRIBERS)
                    await announce(opened, source_id, ids[6:])
                    assert await relay_all(direct.engine, direct.redis, (ARTICLES_ADDED,)) == 3
                    await until_received(received, 9)
                finally:  # a failure must not leave Redis hung or subscribers holding the server open
                    proxy.flowing.set()
                    for client in clients:
                        client.cancel()
                    await asyncio.gather(*clients, return_exceptions=True)
            await opened.close()
            await proxy.close()
    assert received == [[f"Wire {k}" for k in range(9)]] * SUBSCRIBERS
    assert caught_up() - caught_up_before == 3


OUTAGE_SECONDS = 5


async def test_a_worker_survives_a_redis_outage_and_relays_what_was_stored_meanwhile(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    with own_redis(tmp_path / "redis") as server:
        own = settings.model_copy(update={"redis_url": server.url()})
        source_id, ids = await stored_articles(services, settings, 2)
        env = deployment_env(own, tmp_path / "home")
        with running(env, "worker", log=tmp_path / "worker.log") as worker:
            await announce(services, source_id, ids[:1])
            await until_delivered(services, 1)
            # when Redis is down for a while and an article is stored meanwhile
            server.stop()
            await announce(services, source_id, ids[1:])
            started = time.monotonic()
            while time.monotonic() - started < OUTAGE_SECONDS:
                assert worker.process.poll() is None, worker.log.read_text()
                await asyncio.sleep(0.2)
            server.start()
            # then the same worker process relays it
            await until_delivered(services, 2)
            assert worker.process.poll() is None
            restarts = [line for line in worker.lines() if "restarting the loop" in line]
            assert restarts, worker.log.read_text()


async def until_delivered(services: Services, count: int) -> None:
    async with asyncio.timeout(60):
        while True:
            async with services.engine.connect() as connection:
                delivered = await connection.scalar(text(
                    "SELECT count(*) FROM outbox WHERE topic = :topic AND delivered_at IS NOT NULL"),
                    {"topic": ARTICLES_ADDED})  # fmt: skip
            if delivered >= count:
                return
            await asyncio.sleep(0.2)


async def test_a_job_that_fails_on_redis_is_retried_later_with_back_off() -> None:
    calls: list[int] = []

    async def enqueue_something(ctx: dict[str, object]) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise redis.exceptions.ConnectionError("Connection refused")
        return "done"

    job = retried_on_redis(enqueue_something)
    deferrals = []
    for job_try in (1, 2):
        with pytest.raises(Retry) as retry:
            await job({"job_try": job_try})
        deferrals.append(retry.value.defer_score)
    assert deferrals == [1000, 2000]  # ms: 1 s, then 2 s
    assert await job({"job_try": 3}) == "done"


async def test_a_job_that_fails_otherwise_is_not_retried() -> None:
    async def broken(ctx: dict[str, object]) -> None:
        raise ValueError("a bug, not an outage")

    with pytest.raises(ValueError, match="a bug"):
        await retried_on_redis(broken)({"job_try": 1})
