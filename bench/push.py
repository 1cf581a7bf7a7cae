"""Breaking news push, measured end to end on a real API process (`newsagg api`), a scratch database and Redis.

Latency: for each of `--events` stories, 60 articles from 10 outlets are stored and put through the worker's
`understand_articles_job` (understand, cluster, relay): 2.0 a minute over the 30-minute window, not yet breaking. Then
the article that makes the story breaking is committed and the same job runs on it, as a worker does once it picks
the job up (the queue's pick-up delay, `NEWSAGG_WORKER_POLL_DELAY_SECONDS`, comes on top). A subscriber process
holding a `breakingNews` WebSocket (graphql/BreakingNews.graphql) stamps each frame as it arrives: the figure is commit
-> frame, p50/p99. Beside it, the delivery leg alone (an event published on Redis -> the WebSocket frame) and its
baseline in the same run: Redis publish -> a raw redis-py subscriber in that same subscriber process.

Fan-out: `--subscribers` WebSockets on the one API process (held by `--client-processes` processes), each subscribed
to `breakingNews`; a warm-up event shows every subscription attached; then each of `--fanout-events` breaking events
is committed to the outbox and relayed, and the figure is commit -> the last subscriber's frame.

    python -m bench.push [--events 100] [--subscribers 5000] [--client-processes 4] [--fanout-events 3]

PostgreSQL: NEWSAGG_BENCH_DATABASE_URL, else 127.0.0.1:5432 (else an embedded server); Redis: NEWSAGG_BENCH_REDIS_URL,
else redis://127.0.0.1:6379/14. Pub/sub channels are global in Redis: run it where no other newsagg publishes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import websockets
from redis.asyncio import Redis
from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import create_async_engine

from app.articles import repository as articles
from app.articles.fingerprints import content_hash
from app.db import migrate
from app.outbox.models import OutboxEvent
from app.outbox.relay import relay
from app.realtime.broadcast import publish
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from app.sources.models import Source
from app.stories.store import ClusteringCache
from app.stories.velocity import BREAKING_TOPIC
from bench.ingest import scratch_database
from jobs.stories import understand_articles_job

REPO = Path(__file__).resolve().parents[1]
OUTLETS = 10
BEFORE_BREAKING = 60  # 60 in 30 minutes is 2.0 a minute: the 61st makes the story breaking
PROBE_CHANNEL = "newsagg:bench:probe"
SMALL_DOCUMENT = "subscription { breakingNews { cursor title sourceCount } }"
COMMON = ["report", "says", "officials", "talks", "deal", "plan", "vote", "court", "police", "market", "storm", "fire",
          "crisis", "attack", "leaders", "meeting", "health", "minister", "council", "prices", "strike"]  # fmt: skip


def raise_file_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


# --- the subscriber processes ---------------------------------------------------------------------------------------


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def connect(url: str, document: str) -> Any:
    ws = await websockets.connect(url, subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
                                  open_timeout=120, ping_interval=None, max_queue=None)  # fmt: skip
    await ws.send(json.dumps({"type": "connection_init"}))
    assert json.loads(await ws.recv())["type"] == "connection_ack"
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": document}}))
    return ws


async def frames(ws: Any) -> AsyncIterator[tuple[float, dict[str, Any]]]:
    """(arrival time, breakingNews payload) per frame; pings answered."""
    async for raw in ws:
        at = time.time()
        message = json.loads(raw)
        if message["type"] == "ping":
            await ws.send(json.dumps({"type": "pong"}))
        elif message["type"] == "next":
            yield at, message["payload"]["data"]["breakingNews"]


async def latency_client(url: str, redis_url: str) -> None:
    """One breakingNews WebSocket and one raw Redis subscriber, each arrival stamped."""
    ws = await connect(url, (REPO / "graphql" / "BreakingNews.graphql").read_text())
    redis = Redis.from_url(redis_url)
    pubsub = redis.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe(PROBE_CHANNEL)

    async def probes() -> None:
        async for message in pubsub.listen():
            at = time.time()
            emit({"kind": "probe", "sent": json.loads(message["data"])["sent"], "at": at})

    task = asyncio.create_task(probes())
    emit({"kind": "ready"})
    async for at, event in frames(ws):
        emit({"kind": "frame", "title": event["title"], "at": at})
    task.cancel()


async def fanout_client(url: str, count: int, document: str) -> None:
    """`count` WebSockets, each subscribed; one line per event once every socket has it (or on a timeout line)."""
    arrivals: dict[str, list[float]] = defaultdict(list)
    gate = asyncio.Semaphore(100)  # connections opened at once: the server's accept backlog is finite

    async def hold() -> None:
        async with gate:
            ws = await connect(url, document)
        opened.append(ws)
        async for at, event in frames(ws):
            times = arrivals[event["title"]]
            times.append(at)
            if len(times) == count:
                emit({"kind": "event", "title": event["title"], "count": count, "first": min(times),
                      "last": max(times)})  # fmt: skip

    opened: list[Any] = []
    tasks = [asyncio.create_task(hold()) for _ in range(count)]
    while len(opened) < count:
        await asyncio.sleep(0.1)
        if failed := [t for t in tasks if t.done() and t.exception()]:
            raise RuntimeError(f"a connection failed: {failed[0].exception()!r}")
    emit({"kind": "ready", "count": count})
    while line := await asyncio.to_thread(sys.stdin.readline):  # the parent asks how far an event got
        title = line.strip()
        times = arrivals.get(title, [])
        emit({"kind": "partial", "title": title, "count": len(times), "last": max(times, default=0.0)})


# --- the bench ------------------------------------------------------------------------------------------------------


class Child:
    """A subprocess speaking JSON lines."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, *arguments: str, env: dict[str, str] | None = None) -> Child:
        process = await asyncio.create_subprocess_exec(
            sys.executable, *arguments, cwd=REPO, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, limit=2**20,
        )  # fmt: skip
        return cls(process)

    async def line(self, within: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        raw = await asyncio.wait_for(self.process.stdout.readline(), within)
        if not raw:
            raise RuntimeError(f"a child process ended (exit {await self.process.wait()})")
        found: dict[str, Any] = json.loads(raw)
        return found

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


@contextlib.asynccontextmanager
async def api_process(settings: Settings) -> AsyncIterator[str]:
    """`newsagg api` on a free port, against the scratch database and the bench's Redis."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": settings.database_url or "", "REDIS_URL": settings.redis_url or "",
           "NEWSAGG_WS_MAX_CONNECTIONS_PER_CLIENT": "1000000"}  # fmt: skip  # every subscriber: this one address
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "app", "--log-level", "WARNING", "api",
                                                   "--port", str(port), cwd=REPO, env=env)  # fmt: skip
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(300):
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
        yield f"ws://127.0.0.1:{port}/graphql"
    finally:
        await Child(process).stop()


def headline(rng: random.Random, story: list[str]) -> str:
    """Another outlet's headline for the story: its own words, shuffled, and two common ones."""
    words = story + rng.sample(COMMON, 2)
    rng.shuffle(words)
    return " ".join(words).capitalize()


async def store(services: Services, rng: random.Random, story: list[str], count: int, tag: str) -> list[int]:
    now = datetime.now(UTC)
    rows = []
    for k in range(count):
        title = headline(rng, story)
        rows.append(articles.NewArticle(k % OUTLETS + 1, f"{tag}-{k}", f"https://outlet{k % OUTLETS + 1}.example/{tag}"
                                        f"/{k}", title, "", None, now, content_hash(title, "")))  # fmt: skip
    async with services.engine.begin() as connection:
        return [a.id for a in await articles.insert_new(connection, rows)]


async def latency(services: Services, url: str, events: int) -> dict[str, Any]:
    client = await Child.start("-m", "bench.push", "--role", "latency-client", "--url", url,
                               "--redis-url", services.settings.redis_url or "")  # fmt: skip
    ctx: dict[str, Any] = {"services": services, "clustering": ClusteringCache()}
    rng = random.Random(11)
    try:
        assert (await client.line(60))["kind"] == "ready"
        await asyncio.sleep(0.5)  # the subscription reaching the API's broadcaster
        commit_to_frame, commit_to_published, missed = [], [], 0
        for n in range(events):
            story = [f"{rng.choice('bcdfgkmprstvz')}{rng.choice('aeiou')}{n}x{w}" for w in range(5)]
            await understand_articles_job(ctx, await store(services, rng, story, BEFORE_BREAKING, f"s{n}"))
            async with services.db() as session:
                before = await session.scalar(select(func.count()).select_from(OutboxEvent)
                                              .where(OutboxEvent.topic == BREAKING_TOPIC))  # fmt: skip
            trigger = await store(services, rng, story, 1, f"t{n}")
            committed = time.time()
            await understand_articles_job(ctx, trigger)
            published = time.time()
            async with services.db() as session:
                after = await session.scalar(select(func.count()).select_from(OutboxEvent)
                                             .where(OutboxEvent.topic == BREAKING_TOPIC))  # fmt: skip
            if after == before:
                missed += 1  # the clusterer split this story: it did not break
                continue
            frame = await client.line(30)
            while story[0] not in frame.get("title", "").lower():  # another publisher's event on the channel
                frame = await client.line(30)
            commit_to_frame.append(frame["at"] - committed)
            commit_to_published.append(published - committed)
        delivery, raw = await delivery_legs(services, client)
    finally:
        await client.stop()
    return {
        "events": len(commit_to_frame), "stories_that_did_not_break": missed,
        "commit_to_frame_p50_ms": ms(percentile(commit_to_frame, 0.5)),
        "commit_to_frame_p99_ms": ms(percentile(commit_to_frame, 0.99)),
        "commit_to_relayed_p50_ms": ms(percentile(commit_to_published, 0.5)),
        "redis_to_frame_p50_ms": ms(percentile(delivery, 0.5)), "redis_to_frame_p99_ms": ms(percentile(delivery, 0.99)),
        "baseline_raw_redis_p50_ms": ms(percentile(raw, 0.5)), "baseline_raw_redis_p99_ms": ms(percentile(raw, 0.99)),
        "ratio_redis_to_frame_vs_raw_redis_p50": round(percentile(delivery, 0.5) / percentile(raw, 0.5), 1),
    }  # fmt: skip


async def delivery_legs(services: Services, client: Child, rounds: int = 200) -> tuple[list[float], list[float]]:
    """Events published straight on Redis -> frames, interleaved with probes to the raw subscriber."""
    delivery, raw = [], []
    for n in range(rounds):
        sent = time.time()
        event = {"story_id": 1, "title": f"probe {n} {sent}", "source_count": 6, "topics": [], "languages": [],
                 "velocity": 2.1, "at": datetime.now(UTC).isoformat(), "event_id": n + 1}  # fmt: skip
        await publish(services.redis, BREAKING_TOPIC, event)
        frame = await client.line(30)
        while not frame.get("title", "").startswith(f"probe {n} "):  # another publisher's event on the channel
            frame = await client.line(30)
        delivery.append(frame["at"] - float(frame["title"].split()[-1]))
        sent = time.time()
        await services.redis.publish(PROBE_CHANNEL, json.dumps({"sent": sent}))
        probe = await client.line(30)
        while probe["kind"] != "probe":
            probe = await client.line(30)
        raw.append(probe["at"] - probe["sent"])
    return delivery, raw


async def fanout(services: Services, url: str, subscribers: int, processes: int, events: int) -> dict[str, Any]:
    shares = [subscribers // processes + (1 if k < subscribers % processes else 0) for k in range(processes)]
    clients = [await Child.start("-m", "bench.push", "--role", "fanout-client", "--url", url, "--count", str(share))
               for share in shares]  # fmt: skip
    try:
        started = time.perf_counter()
        for client in clients:
            ready = await client.line(600)
            assert ready["kind"] == "ready", ready
        connected_s = time.perf_counter() - started
        for attempt in range(30):  # warm-up: until an event reaches every socket, all subscriptions are attached
            if (await fan_event(services, clients, f"warm-up {attempt}", within=5))[1] == subscribers:
                break
        else:
            raise RuntimeError("the subscriptions never all attached")
        results = [await fan_event(services, clients, f"event {n}", within=60) for n in range(events)]
    finally:
        for client in clients:
            await client.stop()
    spans = [span for span, received in results if received == subscribers]
    return {
        "subscribers": subscribers, "client_processes": processes, "connect_and_subscribe_s": round(connected_s, 1),
        "events": len(results), "events_reaching_all": len(spans),
        "commit_to_last_frame_s": [round(span, 3) for span, _ in results],
        "commit_to_last_frame_median_s": round(statistics.median(spans), 3) if spans else None,
        "within_2_s": bool(spans) and max(spans) <= 2.0,
    }  # fmt: skip


async def fan_event(services: Services, clients: list[Child], title: str, *, within: float) -> tuple[float, int]:
    """One breaking event through the outbox and the relay; (commit -> last frame, subscribers reached)."""
    payload = {"story_id": 1, "title": title, "source_count": 6, "topics": ["world"], "languages": ["en"],
               "velocity": 2.5, "at": datetime.now(UTC).isoformat()}  # fmt: skip
    async with services.engine.begin() as connection:
        await connection.execute(insert(OutboxEvent).values(topic=BREAKING_TOPIC, payload=payload))
    committed = time.time()
    await relay(services.engine, services.redis, [BREAKING_TOPIC])
    last, received = 0.0, 0
    for client in clients:
        try:
            line = await client.line(within)
        except TimeoutError:
            assert client.process.stdin is not None
            client.process.stdin.write(f"{title}\n".encode())
            line = await client.line(30)
        while line.get("title") != title:  # a late line of an earlier event
            line = await client.line(within)
        last, received = max(last, line["last"]), received + int(line["count"])
    return last - committed, received


async def main(args: argparse.Namespace) -> dict[str, Any]:
    raise_file_limit()
    redis_url = os.environ.get("NEWSAGG_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    async with scratch_database() as database_url:
        engine = create_async_engine(database_url)
        await migrate.upgrade(engine)
        async with engine.begin() as connection:
            await connection.execute(insert(Source), [
                {"id": i, "feed_url": f"https://outlet{i}.example/feed", "name": f"Outlet {i}", "min_interval_s": 300,
                 "max_interval_s": 86400, "authority": i / OUTLETS} for i in range(1, OUTLETS + 1)])  # fmt: skip
        await engine.dispose()
        settings = Settings(_env_file=None, database_url=database_url, redis_url=redis_url)  # type: ignore[call-arg]
        services = Services.open(settings, pre_ping=False)
        try:
            async with api_process(settings) as url:
                figures = {"latency": await latency(services, url, args.events)} if args.events else {}
                print(json.dumps(figures), file=sys.stderr)
                figures["fanout"] = await fanout(services, url, args.subscribers, args.client_processes,
                                                 args.fanout_events)  # fmt: skip
        finally:
            await services.redis.flushdb()  # what the run counted (trending buckets) goes with its scratch database
            await services.close()
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--subscribers", type=int, default=5000)
    parser.add_argument("--client-processes", type=int, default=4)
    parser.add_argument("--fanout-events", type=int, default=3)
    parser.add_argument("--role", choices=["bench", "latency-client", "fanout-client"], default="bench",
                        help=argparse.SUPPRESS)  # fmt: skip
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.role == "latency-client":
        asyncio.run(latency_client(arguments.url, arguments.redis_url))
    elif arguments.role == "fanout-client":
        raise_file_limit()
        asyncio.run(fanout_client(arguments.url, arguments.count, SMALL_DOCUMENT))
    else:
        print(json.dumps(asyncio.run(main(arguments))))
