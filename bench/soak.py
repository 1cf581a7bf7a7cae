"""Soak: the whole system as an operator runs it, under sustained mixed load, with Redis restarted in the middle.

`newsagg api` and `newsagg worker` run as real processes on a scratch PostgreSQL database and a Redis server of the
soak's own (so it can be stopped and started again). The worker crawls the real feed snapshots replayed by the demo
feed server (shared data, dates shifted to now, `--speed` times faster); readers run the documents in `graphql/`
back to back; subscribers hold `articleAdded` and `breakingNews` over WebSocket the whole time. Halfway through,
Redis is stopped for `--outage` seconds and started again on the same port.

    python -m bench.soak --minutes N [--readers 4] [--subscribers 6] [--outage 5] [--archive PATH]

The last line is one JSON object: errors (goal 0) and degraded answers (typed errors while Redis is away) by
operation; events published after the subscribers attached vs received per subscriber (lost and duplicated, goal
0); p50/p99 per operation, and the p99 of the last quarter over the first after warm-up (1.0: no drift); each
process's RSS at start, after warm-up (a quarter of the run) and at the end, and its growth after warm-up (goal
within 10%); and the same growth after the replay has covered one clustering window (48 h of news: 4.8 min at the
default speed), `rss_growth_after_window_pct`: until then the live stories a worker holds in memory, and the
caches' working set, grow with the news by design, so growth before it is the working set filling, not a leak.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import websockets
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from app.api.relay import encode_cursor
from app.api.types.breaking import CURSOR_KIND
from app.db.migrate import upgrade
from app.ingest.events import ARTICLES_ADDED
from app.runtime.demo import DemoFeedServer, unpacked
from app.runtime.embedded import EmbeddedRedis
from app.runtime.processes import free_port
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.stories.clustering import ClusteringPolicy
from app.stories.velocity import BREAKING_TOPIC
from bench.figures import quantile
from bench.ingest import DEFAULT_ARCHIVE, scratch_database

ROOT = Path(__file__).resolve().parents[1]
DEMO_MINUTES = (0.05, 0.1)  # each replayed feed is fetched every 3-6 s, as `newsagg up --demo` does
DEGRADED = {"TRENDING_UNAVAILABLE"}  # typed answers of a part that needs Redis while it is away: not errors
READS: list[tuple[str, dict[str, Any]]] = [
    ("Articles", {"first": 20}), ("Stories", {"first": 10}), ("Trending", {"first": 10}),
    ("Search", {"query": "government"}), ("Breaking", {"first": 10}), ("BreakingEvents", {"first": 20}),
    ("Sources", {"first": 20}), ("TopicFeed", {"topic": "WORLD", "first": 10}), ("Feed", {"first": 20}),
    ("Health", {}),
]  # fmt: skip


def document(name: str) -> str:
    return (ROOT / "graphql" / f"{name}.graphql").read_text()


@dataclass
class Figures:
    latencies: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))  # (at, ms)
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    degraded: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    examples: list[str] = field(default_factory=list)  # the first few errors, as they came

    def error(self, operation: str, what: str) -> None:
        self.errors[operation] += 1
        if len(self.examples) < 5:
            self.examples.append(f"{operation}: {what[:300]}")


async def read_forever(url: str, figures: Figures, offset: int, pause: float) -> None:
    """One reader: the documents in turn, each answer checked and timed."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        for turn in range(offset, 10**9):
            await asyncio.sleep(pause)
            name, variables = READS[turn % len(READS)]
            started = time.monotonic()
            try:
                response = await http.post("/graphql", json={"query": document(name), "variables": variables})
            except httpx.HTTPError as error:
                figures.error(name, repr(error))
                continue
            figures.latencies[name].append((started, (time.monotonic() - started) * 1000))
            body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
            codes = {e.get("extensions", {}).get("code") for e in body.get("errors") or []}
            if response.status_code != 200 or (codes - DEGRADED):
                figures.error(name, f"{response.status_code} {response.text}")
            elif codes:
                figures.degraded[name] += 1


@dataclass
class Subscriber:
    operation: str  # ArticleAdded or BreakingNews
    received: list[str] = field(default_factory=list)  # article ids, or breaking events' cursors
    reconnects: int = 0


async def subscribe_forever(url: str, subscriber: Subscriber, figures: Figures) -> None:
    """A graphql-transport-ws client holding one subscription; a lost connection is an error, then it reconnects."""
    while True:
        try:
            async with websockets.connect(url.replace("http", "ws") + "/graphql",
                                          subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]  # fmt: skip
                await ws.send(json.dumps({"type": "connection_init"}))
                await ws.send(json.dumps({"id": "1", "type": "subscribe",
                                          "payload": {"query": document(subscriber.operation)}}))  # fmt: skip
                async for frame in ws:
                    _receive(json.loads(frame), subscriber, figures)
                    if json.loads(frame)["type"] == "ping":
                        await ws.send(json.dumps({"type": "pong"}))
        except (OSError, websockets.exceptions.WebSocketException) as error:
            figures.error(subscriber.operation, repr(error))
        subscriber.reconnects += 1
        await asyncio.sleep(1)


def _receive(message: dict[str, Any], subscriber: Subscriber, figures: Figures) -> None:
    if message["type"] == "next" and not message["payload"].get("errors"):
        data = message["payload"]["data"]
        node = data.get("articleAdded") or data.get("breakingNews")
        subscriber.received.append(database_id(node["id"]) if "articleAdded" in data else node["cursor"])
    elif message["type"] not in ("connection_ack", "ping", "pong"):
        figures.error(subscriber.operation, json.dumps(message))


@dataclass
class Deployment:
    home: Path
    redis: EmbeddedRedis
    database_url: str
    api_url: str = ""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSAGG_", "MEILI_", "PROMETHEUS_"))}
        return env | {"DATABASE_URL": self.database_url, "REDIS_URL": self.redis.url(), "NEWSAGG_HOME": str(self.home),
                      "NEWSAGG_ALLOW_LOOPBACK_SOURCES": "true", "NEWSAGG_POLITENESS_REQUESTS_PER_SECOND": "50",
                      "NEWSAGG_POLITENESS_CONCURRENT_PER_SITE": "16",
                      "NEWSAGG_CRAWL_TICK_SECONDS": "2", "NEWSAGG_STORY_MERGE_SECONDS": "10",
                      # every reader comes from 127.0.0.1: the soak measures serving, not the rate limits
                      "NEWSAGG_RATE_LIMIT_POINTS": str(10**9),
                      "NEWSAGG_RATE_LIMIT_ANONYMOUS_POINTS": str(10**9)}  # fmt: skip

    def start(self, name: str, *args: str) -> None:
        log = (self.home / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen([sys.executable, "-m", "app", *args], cwd=ROOT, env=self.env(),
                                                stdin=subprocess.DEVNULL, stdout=log, stderr=log)  # fmt: skip

    def rss_mb(self) -> dict[str, float]:
        """Each process's resident memory, its children's included (MB)."""
        sizes = {}
        for name, popen in self.processes.items():
            process = psutil.Process(popen.pid)
            tree = [process, *process.children(recursive=True)]
            sizes[name] = round(sum(p.memory_info().rss for p in tree) / 2**20, 1)
        return sizes

    def stop(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


@contextlib.asynccontextmanager
async def deployed(archive: Path, speed: float, hours: float) -> AsyncIterator[Deployment]:
    """Redis, a migrated scratch database with the replayed feeds as sources, the demo feed server, API, worker."""
    with tempfile.TemporaryDirectory(prefix="newsagg-soak-") as folder, own_redis(Path(folder)) as redis:
        async with scratch_database() as url:
            engine = create_async_engine(url)
            await upgrade(engine)
            await engine.dispose()
            deployment = Deployment(Path(folder), redis, url)
            feeds = DemoFeedServer(unpacked(archive, deployment.home), speed=speed, hours=hours).start()
            try:
                await register(deployment, feeds)
                port = free_port()
                deployment.api_url = f"http://127.0.0.1:{port}"
                deployment.start("api", "api", "--port", str(port))
                deployment.start("worker", "worker")
                try:
                    await until_healthy(deployment)
                    yield deployment
                finally:
                    deployment.stop()
            finally:
                feeds.stop()


@contextlib.contextmanager
def own_redis(folder: Path) -> Iterator[EmbeddedRedis]:
    redis = EmbeddedRedis(folder / "redis")
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()


async def register(deployment: Deployment, feeds: DemoFeedServer) -> None:
    from app.db.engine import create_engine, session_factory

    settings = Settings(_env_file=None, database_url=deployment.database_url, allow_loopback_sources=True,  # type: ignore[call-arg]
                        crawl_interval_floor_seconds=DEMO_MINUTES[0] * 60)  # fmt: skip
    engine = create_engine(settings)
    async with session_factory(engine).begin() as session:
        for feed in feeds.feeds.values():
            await create_source(session, settings, SourceRequest(
                feed_url=feeds.url(feed), name=feed.path.strip("/"), min_interval_minutes=DEMO_MINUTES[0],
                max_interval_minutes=DEMO_MINUTES[1]))  # fmt: skip
    await engine.dispose()


async def until_healthy(deployment: Deployment) -> None:
    async with httpx.AsyncClient(base_url=deployment.api_url, timeout=2) as http, asyncio.timeout(120):
        while True:
            for name, process in deployment.processes.items():
                if process.poll() is not None:
                    raise SystemExit(f"{name} exited: {(deployment.home / f'{name}.log').read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get("/healthz")).status_code == 200:
                    return
            await asyncio.sleep(0.2)


TOPICS = {"ArticleAdded": ARTICLES_ADDED, "BreakingNews": BREAKING_TOPIC}
_NEWEST = text("SELECT coalesce(max(id), 0) FROM outbox WHERE topic = :topic")
_UNDELIVERED = text("SELECT count(*) FROM outbox WHERE topic = :topic AND id <= :last AND delivered_at IS NULL")
_BETWEEN = text("SELECT id, payload FROM outbox WHERE topic = :topic AND id > :first AND id <= :last ORDER BY id")


async def marks(database_url: str) -> dict[str, int]:
    """The newest outbox event of each subscribed topic."""
    engine = create_async_engine(database_url)
    async with engine.connect() as connection:
        newest = {topic: int(await connection.scalar(_NEWEST, {"topic": topic})) for topic in TOPICS.values()}
    await engine.dispose()
    return newest


async def published(database_url: str, first: dict[str, int], last: dict[str, int],
                    drain_seconds: float) -> dict[str, list[str]]:  # fmt: skip
    """What each kind of subscriber should have received: the article ids and breaking cursors of the events written
    between the marks, once the relay has delivered every one of them (waiting up to `drain_seconds`)."""
    engine = create_async_engine(database_url)
    expected: dict[str, list[str]] = {}
    async with engine.connect() as connection, asyncio.timeout(drain_seconds):
        for operation, topic in TOPICS.items():
            marked = {"topic": topic, "first": first[topic], "last": last[topic]}
            while await connection.scalar(_UNDELIVERED, marked):
                await connection.commit()  # a fresh snapshot for the next look
                await asyncio.sleep(0.5)
            rows = (await connection.execute(_BETWEEN, marked)).all()
            expected[operation] = ([str(i) for row in rows for i in row.payload["article_ids"]]
                                   if topic == ARTICLES_ADDED
                                   else [encode_cursor(CURSOR_KIND, [row.id]) for row in rows])  # fmt: skip
    await engine.dispose()
    return expected


def database_id(global_id: str) -> str:
    return base64.b64decode(global_id).decode().split(":", 1)[1]


async def restart_redis(deployment: Deployment, outage: float) -> None:
    deployment.redis.stop()
    await asyncio.sleep(outage)
    await asyncio.to_thread(deployment.redis.start)


async def sample_rss(deployment: Deployment, series: list[dict[str, float]], every: float) -> None:
    """Each process's RSS every `every` seconds: whether growth levels off or keeps on."""
    while True:
        await asyncio.sleep(every)
        series.append(deployment.rss_mb())


async def rss_at(deployment: Deployment, rss: dict[str, dict[str, float]], name: str, after_s: float) -> None:
    await asyncio.sleep(after_s)
    rss[name] = deployment.rss_mb()


def rss_growth(rss: dict[str, dict[str, float]], since: str = "after_warm_up") -> dict[str, float]:
    """Per process: RSS at the end over RSS at `since`, as a percentage change."""
    return {name: round((rss["end"][name] / mb - 1) * 100, 1) for name, mb in rss[since].items()}


def operations(figures: Figures, baseline: tuple[float, float], late: tuple[float, float]) -> dict[str, Any]:
    """p50/p99 per operation over the run, and the p99 of the last quarter over that of the quarter after warm-up."""
    report = {}
    for name, timed in sorted(figures.latencies.items()):
        early = [ms for at, ms in timed if baseline[0] <= at < baseline[1]]
        last = [ms for at, ms in timed if late[0] <= at < late[1]]
        all_ms = [ms for _, ms in timed]
        report[name] = {"count": len(all_ms), "p50_ms": quantile(all_ms, 0.5), "p99_ms": quantile(all_ms, 0.99),
                        "p99_late_over_early": round(quantile(last, 0.99) / quantile(early, 0.99), 2)
                        if early and last else None}  # fmt: skip
    return report


def deliveries(subscribers: list[Subscriber], expected: dict[str, list[str]]) -> list[dict[str, Any]]:
    report = []
    for subscriber in subscribers:
        wanted, got = expected[subscriber.operation], subscriber.received
        report.append({"subscription": subscriber.operation, "published": len(wanted),
                       "received": len(set(got) & set(wanted)), "lost": len(set(wanted) - set(got)),
                       "duplicated": len(got) - len(set(got)), "reconnects": subscriber.reconnects})  # fmt: skip
    return report


async def until_subscribed(url: str, count: int) -> None:
    """Until the API runs `count` subscriptions (its /metrics), so an event written from now on reaches them all."""
    async with httpx.AsyncClient(base_url=url, timeout=5) as http, asyncio.timeout(60):
        while True:
            families = text_string_to_metric_families((await http.get("/metrics")).text)
            running = sum(s.value for f in families for s in f.samples if s.name == "newsagg_ws_operations")
            if running >= count:
                return
            await asyncio.sleep(0.2)


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    duration = args.minutes * 60
    hours = max(24.0, duration * args.speed / 3600 * 1.2)  # the replay does not run dry before the end
    async with deployed(args.archive, args.speed, hours) as deployment:
        url, figures = deployment.api_url, Figures()
        subscribers = [Subscriber("BreakingNews" if k % 3 == 2 else "ArticleAdded") for k in range(args.subscribers)]
        listening = [asyncio.create_task(subscribe_forever(url, s, figures)) for s in subscribers]
        await until_subscribed(url, len(subscribers))
        first = await marks(deployment.database_url)
        readers = [asyncio.create_task(read_forever(url, figures, k, args.pause)) for k in range(args.readers)]
        began = time.monotonic()
        rss = {"start": deployment.rss_mb()}
        series: list[dict[str, float]] = []
        readers.append(asyncio.create_task(sample_rss(deployment, series, duration / 12)))
        window_s = ClusteringPolicy().window.total_seconds() / args.speed
        if window_s < duration:
            readers.append(asyncio.create_task(rss_at(deployment, rss, "after_window", window_s)))
        await asyncio.sleep(duration / 4)
        rss["after_warm_up"] = deployment.rss_mb()
        await asyncio.sleep(duration / 4)
        outage_at = time.monotonic()
        await restart_redis(deployment, args.outage)
        await asyncio.sleep(max(0.0, began + duration - time.monotonic()))
        rss["end"] = deployment.rss_mb()
        last = await marks(deployment.database_url)
        for task in readers:
            task.cancel()
        expected = await published(deployment.database_url, first, last, drain_seconds=120)
        await asyncio.sleep(5)  # the last relayed events reach the subscribers
        for task in listening:
            task.cancel()
        await asyncio.gather(*readers, *listening, return_exceptions=True)
    quarter = duration / 4
    baseline, late = (began + quarter, began + 2 * quarter), (began + 3 * quarter, began + duration)
    return {
        "minutes": args.minutes, "readers": args.readers, "subscribers": args.subscribers,
        "redis_outage_s": args.outage, "redis_stopped_at_s": round(outage_at - began, 1),
        "errors": sum(figures.errors.values()), "errors_by_operation": dict(figures.errors),
        "error_examples": figures.examples, "degraded_by_operation": dict(figures.degraded),
        "events_lost": sum(d["lost"] for d in deliveries(subscribers, expected)),
        "events_duplicated": sum(d["duplicated"] for d in deliveries(subscribers, expected)),
        "deliveries": deliveries(subscribers, expected),
        "operations": operations(figures, baseline, late),
        "rss_mb": rss, "rss_growth_after_warm_up_pct": rss_growth(rss),
        "rss_growth_after_window_pct": rss_growth(rss, "after_window") if "after_window" in rss else None,
        "rss_every_twelfth_mb": {name: [sample[name] for sample in series] for name in rss["start"]},
    }  # fmt: skip


def default_archive() -> Path:
    shared = os.environ.get("NEWSAGG_SHARED_DATA")
    return Path(shared) / "feeds" / DEFAULT_ARCHIVE.name if shared else DEFAULT_ARCHIVE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--readers", type=int, default=4, help="clients running queries back to back")
    parser.add_argument("--pause", type=float, default=0.05, help="seconds a reader waits between two queries")
    parser.add_argument("--subscribers", type=int, default=6, help="WebSocket subscriptions held (2 in 3 articleAdded)")
    parser.add_argument("--outage", type=float, default=5, help="seconds Redis stays stopped in the middle")
    parser.add_argument("--speed", type=float, default=600, help="the replay runs this many times faster than the news")
    parser.add_argument("--archive", type=Path, default=default_archive(),
                        help="feed snapshots (default: under NEWSAGG_SHARED_DATA, else ../shared/data)")  # fmt: skip
    args = parser.parse_args()
    if not args.archive.exists():
        print(f"skipped: no feed snapshots at {args.archive} (pass --archive; see the shared data's README)")
        print(json.dumps({"skipped": f"no feed snapshots at {args.archive}"}))
        return
    print(json.dumps(asyncio.run(soak(args))))


if __name__ == "__main__":
    main()
