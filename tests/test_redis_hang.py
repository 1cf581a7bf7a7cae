"""A Redis that hangs rather than refuses (its process stopped with SIGSTOP: connections stay open, the kernel still
accepts new ones, nothing is answered), under a running API and a worker's loop: every request answers, with data
or a coded error, after a timeout instead of never; share links redirect from PostgreSQL; the worker's loop restarts
instead of waiting; an idle subscription is not mistaken for a hung Redis; after SIGCONT everything works again
without a restart.

Each test runs a redis-server of its own on a free port, continued and stopped even when the test fails."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from arq.worker import func
from prometheus_client import REGISTRY
from redis.exceptions import RedisError

from app.api.queue import JobQueue
from app.ingest.events import ARTICLES_ADDED
from app.outbox.relay import relay_all
from app.realtime.broadcast import publish
from app.runtime.embedded import EmbeddedRedis
from app.services import Services
from app.settings import Settings
from jobs.worker import create_article_worker
from tests.conftest import GraphQLClient, document, serve_api, until_listening
from tests.newsroom import StorySpec, add_source, add_story, global_id, sign_up
from tests.test_redis_outage import announce, collect, degraded, own_redis, services_on, stored_articles, until_received

HANG_GUARD_S = 15  # a request still unanswered after this is hung (each Redis call gives up after 2 s, the default)
CONCURRENT = 8  # requests at once while Redis hangs: each must pay its timeout, not wait for the others' in turn
T = TypeVar("T")


@contextlib.contextmanager
def hung(server: EmbeddedRedis) -> Iterator[None]:
    """`server` stopped (SIGSTOP) inside, continued (SIGCONT) on the way out, whatever happened."""
    pid = int(server.pid_file.read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


async def answered(call: Awaitable[T]) -> T:
    """`call`'s answer; failing (not waiting on) a call that hangs."""
    return await asyncio.wait_for(call, HANG_GUARD_S)


async def timed(took: dict[str, float], name: str, call: Awaitable[T]) -> T:
    """`call`'s answer (guarded as `answered`), its time in `took[name]`: a figure to print, not asserted."""
    started = time.monotonic()
    answer = await answered(call)
    took[name] = time.monotonic() - started
    return answer


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def error_codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors") or []]


async def newsroom(api: GraphQLClient, services: Services) -> tuple[GraphQLClient, str, str]:
    """A story of three outlets, a reader, and the reader's share link to its first article: (the reader, that
    article's id, the link's code)."""
    sources = [await add_source(services, services.settings, f"outlet{k}") for k in range(3)]
    _, articles = await add_story(services, StorySpec("Harbour bridge reopens after repairs", sources))
    reader = api.as_(await sign_up(api))
    created = await reader.run("ShareLinkCreate", input={"articleId": global_id("Article", articles[0])})
    code: str = created["shareLinkCreate"]["shareLink"]["code"]
    return reader, global_id("Article", articles[0]), code


@contextlib.asynccontextmanager
async def serve(services: Services) -> AsyncIterator[tuple[str, httpx.AsyncClient, GraphQLClient]]:
    """The API on `services`, and clients of it (no hang guard of their own: `answered` is the guard)."""
    async with serve_api(services.settings, services) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield url, http, GraphQLClient(http)


async def until_relayed(services: Services, count: int) -> None:
    """Until the outbox relay has published `count` events (it publishes none while Redis cannot take them)."""
    relayed = 0
    async with asyncio.timeout(60):
        while True:
            relayed += await relay_all(services.engine, services.redis, (ARTICLES_ADDED,))
            if relayed >= count:
                return
            await asyncio.sleep(0.2)


def story_ids(body: dict[str, Any]) -> set[str]:
    return {edge["node"]["story"]["id"] for edge in body["data"]["feed"]["edges"]}


async def until_redis_used_again(http: httpx.AsyncClient) -> None:
    """Until a request is metered again (the limiter asks Redis, and Redis answers)."""
    async with asyncio.timeout(60):
        while True:
            if "x-ratelimit-remaining" in (await http.post("/graphql", json={"query": "{ __typename }"})).headers:
                return
            await asyncio.sleep(0.2)


async def test_while_redis_hangs_requests_answer_and_share_links_redirect_then_all_recovers(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    with own_redis(tmp_path / "redis") as server:
        async with services_on(settings, server) as own, serve(own) as (url, http, api):
            # given a story, a share link to it, a live subscriber, and connections to Redis open and warm
            reader, article, code = await newsroom(api, own)
            engagement = {"articleId": article, "action": "READ", "sessionId": "s1", "dwellMs": 30_000}
            source_id, ids = await stored_articles(own, own.settings, 2)
            received: list[list[str]] = [[]]
            subscriber = asyncio.create_task(collect(url, received[0]))
            await until_listening(own, ARTICLES_ADDED)
            for name in ("Articles", "Trending"):
                assert not error_codes(await api.post(document(name), {"first": 10})), name
            feed = await api.post(document("Feed"), {"first": 10})
            assert story_ids(feed)
            assert not error_codes(feed)
            visit = (await http.get(f"/s/{code}")).headers["location"]

            # when Redis hangs
            with hung(server):
                started = time.monotonic()
                feeds = await answered(asyncio.gather(*(api.post(document("Feed"), {"first": 10})
                                                        for _ in range(CONCURRENT))))  # fmt: skip
                took = {"feeds": time.monotonic() - started}
                articles = await timed(took, "articles", api.post(document("Articles"), {"first": 10}))
                trending = await timed(took, "trending", api.post(document("Trending")))
                mine = await timed(took, "reader's feed", reader.post(document("Feed"), {"first": 10}))
                engaged = await timed(took, "engagement", reader.post(document("EngagementRecord"), engagement))
                await asyncio.sleep(own.settings.redis_timeout_seconds)  # past the silence: this one asks Redis
                redirect = await timed(took, "redirect", http.get(f"/s/{code}"))
                health = await timed(took, "healthz", http.get("/healthz"))
            print(f"\nRedis hung (SIGSTOP), timeout {own.settings.redis_timeout_seconds:g} s: {CONCURRENT} feeds at "
                  "once " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in took.items()))  # fmt: skip

            # then each was answered: from PostgreSQL, or with a coded error for what only Redis holds
            assert all(not error_codes(f) and story_ids(f) == story_ids(feed) for f in feeds), feeds
            assert not error_codes(articles)
            assert len(articles["data"]["articles"]["edges"]) == 5
            assert error_codes(trending) == ["TRENDING_UNAVAILABLE"]
            assert not error_codes(mine)
            assert story_ids(mine) == story_ids(feed)
            assert engaged["data"]["engagementRecord"]["errors"] == []  # stored in PostgreSQL; Redis's part skipped
            assert engaged["data"]["engagementRecord"]["recorded"] is True
            assert (redirect.status_code, redirect.headers["location"]) == (302, visit)
            assert (health.status_code, health.json()["degraded"]) == (200, ["redis"])
            assert sample("newsagg_redis_silences_total") > 0

            # and once Redis answers again, the same processes use it again: metered, cached, live events
            await until_redis_used_again(http)
            cache_failures, uncounted = degraded("cache"), sample("newsagg_share_link_visits_uncounted_total",
                                                                  {"kind": "click"})  # fmt: skip
            assert not error_codes(await api.post(document("Trending")))
            assert not error_codes(await api.post(document("Feed"), {"first": 10}))
            assert (await http.get(f"/s/{code}")).status_code == 302
            assert degraded("cache") == cache_failures
            assert sample("newsagg_share_link_visits_uncounted_total", {"kind": "click"}) == uncounted
            await announce(own, source_id, ids)
            await until_relayed(own, len(ids))
            await until_received(received, len(ids))
            subscriber.cancel()
            await asyncio.gather(subscriber, return_exceptions=True)
    assert received == [["Wire 0", "Wire 1"]]


def listener_metrics() -> tuple[float, float, float]:
    return (sample("newsagg_broadcast_reconnects_total"), sample("newsagg_broadcast_silences_total"),
            degraded("broadcast"))  # fmt: skip


async def test_an_idle_subscription_outlives_many_command_timeouts(settings: Settings, tmp_path: Path) -> None:
    """The pub/sub reader waits for messages with a timeout of its own (the liveness): a socket timeout shorter than
    the silence of an idle channel is not a failure, and causes no reconnect."""
    quick = settings.model_copy(update={"redis_timeout_seconds": 0.2, "broadcast_liveness_seconds": 1.0})
    with own_redis(tmp_path / "redis") as server:
        async with services_on(quick, server) as own:
            async with own.broadcaster.listen(ARTICLES_ADDED) as events:
                await until_listening(own, ARTICLES_ADDED)
                before = listener_metrics()
                await asyncio.sleep(3)  # idle: fifteen socket timeouts, three liveness PINGs
                await publish(own.redis, ARTICLES_ADDED, {"article_id": 1})
                event = await asyncio.wait_for(events.get(), 10)
            assert listener_metrics() == before
    assert event == {"article_id": 1}


async def test_a_worker_loop_and_an_enqueuer_outlive_a_hung_redis(settings: Settings, tmp_path: Path) -> None:
    done: list[int] = []

    async def note(ctx: dict[str, Any], n: int) -> None:
        done.append(n)

    async def until_done(n: int) -> None:
        async with asyncio.timeout(60):
            while True:
                if n in done:
                    return
                await asyncio.sleep(0.05)

    with own_redis(tmp_path / "redis") as server:
        own = settings.model_copy(update={"redis_url": server.url(), "redis_backoff_max_seconds": 0.5})
        queue = JobQueue(own)
        worker = create_article_worker(own, functions=[func(note, name="note")], queue_name=own.queue_name,
                                       on_startup=None, on_shutdown=None, ctx={})  # fmt: skip
        loop = asyncio.create_task(worker.main())
        try:
            await queue.enqueue("note", 1)
            await until_done(1)
            restarts = sample("newsagg_worker_loop_restarts_total")
            with hung(server):
                # the loop notices (its poll times out) and restarts, instead of waiting on Redis forever
                async with asyncio.timeout(HANG_GUARD_S):
                    while True:
                        if sample("newsagg_worker_loop_restarts_total") > restarts:
                            break
                        await asyncio.sleep(0.1)
                with pytest.raises(RedisError):  # an enqueue fails in time: its caller degrades or retries
                    await answered(queue.enqueue("note", 2))
            async with asyncio.timeout(60):  # Redis answers again: the same pool and loop carry on
                while True:
                    try:
                        await queue.enqueue("note", 3)
                        break
                    except RedisError:
                        await asyncio.sleep(0.2)
            await until_done(3)
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)
            await worker.pool.aclose()
            await queue.close()
    assert {1, 3} <= set(done)
