"""The `feed` query under load, against a running API server, next to strawberry's trivial `{ __typename }`.

A scratch database (the real migrations) gets `--stories` stories (default 10k) of ~10 articles each (100k), over
300 sources, spread over the last 72 hours, and `--users` readers (default 1k) with learned interests, follows,
mutes, preferred languages, read history and a session token each. `newsagg api` serves it in its own process
(Redis 127.0.0.1:6379 database 14, flushed first). A light HTTP/1.1 keep-alive client then measures, in one run:

- uncached: the first feed page of readers whose ranking is not cached, one request at a time (p50/p95);
- cached: `--connections` connections (default 64), each a signed-in reader asking for their first feed page
  again and again for `--seconds`, latency p50/p99 and requests/s;
- baseline: the same connections asking `{ __typename }`; the ratio is cached-feed requests/s over baseline's;
- steady: the same 64 connections at `--load` (default half) of the cached capacity just measured, paced (open
  loop), so latency is measured under load rather than in the queue of a saturated server.

    python -m bench.feed [--stories 10000] [--users 1000] [--connections 64] [--seconds 10]

The last line is one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from app.articles.models import Article
from app.db import migrate
from app.runtime.processes import free_port
from app.sources.models import Source
from app.stories.models import StoryCluster
from app.topics.keywords import Topic
from app.users.models import ReadEvent, SourceFollow, SourceMute, TopicFollow, User, UserInterest, UserSession
from app.users.service import SESSION_PREFIX, digest
from bench.figures import quantile
from bench.ingest import scratch_database

ROOT = Path(__file__).resolve().parents[1]
REDIS_URL = os.environ.get("NEWSAGG_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
FEED_QUERY = (ROOT / "graphql" / "Feed.graphql").read_text()
TOPICS = [t.value for t in Topic]
LANGUAGES = ["en"] * 8 + ["fr", "de"]
_WORDS = (
    "minister court storm market league vaccine election summit border strike rates climate rocket trial "
    "merger protest quake budget tariff virus film album player coach senate chip satellite drought"
)
WORDS = _WORDS.split()


def headline(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 9))).capitalize()


async def populate(connection: AsyncConnection, stories: int, users: int, rng: random.Random) -> list[str]:
    """The corpus and the readers; returns one session token per reader."""
    now = datetime.now(UTC)
    sources = [{"feed_url": f"http://bench.example/{i}", "name": f"Outlet {i}", "authority": round(rng.random(), 2),
                "language": rng.choice(LANGUAGES), "min_interval_s": 60, "max_interval_s": 900}
               for i in range(300)]  # fmt: skip
    source_ids = list(await connection.scalars(insert(Source).returning(Source.id), sources))
    story_rows, article_rows = [], []
    for _ in range(stories):
        size = max(1, min(int(rng.paretovariate(1.2) * 4), 60))
        covering = rng.sample(source_ids, min(size, len(source_ids), rng.randint(1, 15)))
        topics = rng.sample(TOPICS, rng.choice((1, 1, 2)))
        updated = now - timedelta(hours=rng.random() * 72)
        title = headline(rng)
        story_rows.append({"title": title, "topics": topics, "topic_counts": dict.fromkeys(topics, size),
                           "languages": [rng.choice(LANGUAGES)], "source_ids": sorted(covering),
                           "article_count": size, "source_count": len(covering), "velocity": 0.0,
                           "is_breaking": rng.random() < 0.003, "first_seen_at": updated - timedelta(hours=2),
                           "last_updated_at": updated})  # fmt: skip
    story_ids = []
    for chunk in range(0, stories, 1000):
        story_ids += list(await connection.scalars(insert(StoryCluster).returning(StoryCluster.id),
                                                   story_rows[chunk : chunk + 1000]))  # fmt: skip
    for story_id, row in zip(story_ids, story_rows, strict=True):
        for k in range(row["article_count"]):
            n = len(article_rows)
            article_rows.append({"source_id": row["source_ids"][k % len(row["source_ids"])], "external_id": str(n),
                                 "url": f"https://bench.example/a/{n}", "title": row["title"] if k == 0 else
                                 headline(rng), "summary": "", "published_at": row["last_updated_at"]
                                 - timedelta(minutes=k), "content_hash": n, "language": row["languages"][0],
                                 "topics": row["topics"], "cluster_id": story_id})  # fmt: skip
            if len(article_rows) >= 10 * stories:
                break
    lead: dict[int, int] = {}
    for chunk in range(0, len(article_rows), 5000):
        batch = article_rows[chunk : chunk + 5000]
        ids = list(await connection.scalars(insert(Article).returning(Article.id), batch))
        for article_id, row in zip(ids, batch, strict=True):
            lead.setdefault(row["cluster_id"], article_id)
    await connection.execute(text("UPDATE story_clusters s SET representative_article_id = l.article "
                                  "FROM unnest(CAST(:s AS bigint[]), CAST(:a AS bigint[])) AS l(story, article) "
                                  "WHERE s.id = l.story"), {"s": list(lead), "a": list(lead.values())})  # fmt: skip
    tokens = [f"{SESSION_PREFIX}bench{u}" for u in range(users)]
    user_ids = list(await connection.scalars(insert(User).returning(User.id), [
        {"email": f"reader{u}@bench.example", "password_hash": "unused",
         "preferred_languages": ["en"] if rng.random() < 0.5 else []} for u in range(users)]))  # fmt: skip
    await connection.execute(insert(UserSession), [{"user_id": u, "token_hash": digest(t), "expires_at":
                                                    now + timedelta(days=1)} for u, t in zip(user_ids, tokens,
                                                                                            strict=True)])  # fmt: skip
    await connection.execute(insert(UserInterest), [
        {"user_id": u, "topic_weights": {t: round(rng.uniform(-0.1, 0.6), 3) for t in rng.sample(TOPICS, 3)},
         "updated_at": now} for u in user_ids])  # fmt: skip
    await connection.execute(insert(TopicFollow), [{"user_id": u, "topic": rng.choice(TOPICS)} for u in user_ids])
    await connection.execute(insert(SourceFollow), [{"user_id": u, "source_id": rng.choice(source_ids)}
                                                    for u in user_ids])  # fmt: skip
    await connection.execute(insert(SourceMute), [{"user_id": u, "source_id": rng.choice(source_ids)}
                                                  for u in user_ids])  # fmt: skip
    article_count = len(article_rows)
    await connection.execute(insert(ReadEvent), [
        {"user_id": u, "article_id": a, "session_id": "s", "action": "read", "at": now - timedelta(hours=rng.random()
                                                                                                 * 48)}
        for u in user_ids for a in rng.sample(range(1, article_count + 1), 20)])  # fmt: skip
    await connection.execute(text("ANALYZE"))
    return tokens


class Client:
    """One keep-alive HTTP/1.1 connection sending pre-encoded GraphQL POSTs."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader
        self.writer: asyncio.StreamWriter

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, request: bytes) -> bytes:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        body = await self.reader.readexactly(length)
        if not head.startswith(b"HTTP/1.1 200") or b'"errors"' in body[:200]:
            raise RuntimeError(f"{head[:40]!r} {body[:300]!r}")
        return body

    def close(self) -> None:
        self.writer.close()


def request(port: int, query: str, token: str | None, variables: dict[str, Any] | None = None) -> bytes:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n{auth}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body  # fmt: skip


async def load(port: int, requests: list[bytes], seconds: float) -> tuple[list[float], float]:
    """Each request body on its own connection, repeated for `seconds`: latencies (ms) and requests/s."""
    clients = [Client(port) for _ in requests]
    await asyncio.gather(*(c.open() for c in clients))
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def run(client: Client, body: bytes) -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            await client.post(body)
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(run(c, b) for c, b in zip(clients, requests, strict=True)))
    elapsed = time.perf_counter() - started
    for c in clients:
        c.close()
    return latencies, len(latencies) / elapsed


async def paced(port: int, requests: list[bytes], rate: float, seconds: float) -> list[float]:
    """Open-loop load: `rate` requests/s in all, spread evenly over the connections; latencies (ms)."""
    clients = [Client(port) for _ in requests]
    await asyncio.gather(*(c.open() for c in clients))
    latencies: list[float] = []
    interval = len(requests) / rate
    start = time.perf_counter()

    async def run(index: int, client: Client, body: bytes) -> None:
        due = start + interval * index / len(requests)
        while due < start + seconds:
            await asyncio.sleep(max(due - time.perf_counter(), 0))
            sent = time.perf_counter()
            await client.post(body)
            latencies.append((time.perf_counter() - sent) * 1000)
            due += interval

    await asyncio.gather(*(run(i, c, b) for i, (c, b) in enumerate(zip(clients, requests, strict=True))))
    for c in clients:
        c.close()
    return latencies


async def serve(database_url: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": REDIS_URL, "NEWSAGG_GRAPHIQL": "false"}
    command = [sys.executable, "-m", "app", "--log-level", "WARNING", "api", "--port", str(port)]
    process = subprocess.Popen(command, env=env, cwd=ROOT)  # noqa: ASYNC220 (once, before any measuring)
    for _ in range(300):
        if process.poll() is not None:
            break
        try:
            client = Client(port)
            await client.open()
            client.close()
            return process
        except OSError:
            await asyncio.sleep(0.1)
    process.kill()
    raise RuntimeError("the API server did not start")


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(7)
    redis = Redis.from_url(REDIS_URL)
    await redis.flushdb()
    async with scratch_database() as url:
        engine = create_async_engine(url)
        await migrate.upgrade(engine)
        started = time.perf_counter()
        async with engine.begin() as connection:
            tokens = await populate(connection, args.stories, args.users, rng)
        async with engine.connect() as connection:
            articles = await connection.scalar(text("SELECT count(*) FROM articles"))
        await engine.dispose()
        print(f"populated {args.stories} stories, {articles} articles, {args.users} readers in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)  # fmt: skip
        port = free_port()
        server = await serve(url, port)
        try:
            figures = await measure(port, tokens, args)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
    await redis.flushdb()
    await redis.aclose()
    return {"stories": args.stories, "articles": articles, "users": args.users, **figures}


async def measure(port: int, tokens: list[str], args: argparse.Namespace) -> dict[str, Any]:
    variables = {"first": 20}
    one = Client(port)
    await one.open()
    await one.post(request(port, "{ __typename }", None))  # warm the process
    cold = tokens[args.connections : args.connections + args.uncached]
    uncached = []
    for token in cold:
        started = time.perf_counter()
        await one.post(request(port, FEED_QUERY, token, variables))
        uncached.append((time.perf_counter() - started) * 1000)
    one.close()
    warm = tokens[: args.connections]
    feeds = [request(port, FEED_QUERY, t, variables) for t in warm]
    for body in feeds:  # cache every connection's feed first
        client = Client(port)
        await client.open()
        await client.post(body)
        client.close()
    trivial = [request(port, "{ __typename }", t) for t in warm]
    rounds: dict[str, list[tuple[list[float], float]]] = {"feed": [], "trivial": []}
    for _ in range(args.rounds):  # alternate, to even out the machine's noise
        rounds["trivial"].append(await load(port, trivial, args.seconds / args.rounds))
        rounds["feed"].append(await load(port, feeds, args.seconds / args.rounds))
    feed_latency = [x for lat, _ in rounds["feed"] for x in lat]
    trivial_latency = [x for lat, _ in rounds["trivial"] for x in lat]
    feed_rps = statistics.median(r for _, r in rounds["feed"])
    trivial_rps = statistics.median(r for _, r in rounds["trivial"])
    steady_rate = round(feed_rps * args.load)
    steady = await paced(port, feeds, steady_rate, args.seconds)
    return {
        "connections": args.connections,
        "uncached_p50_ms": quantile(uncached, 0.5),
        "uncached_p95_ms": quantile(uncached, 0.95),
        "cached_p50_ms": quantile(feed_latency, 0.5),
        "cached_p99_ms": quantile(feed_latency, 0.99),
        "cached_rps": round(feed_rps, 1),
        "typename_p50_ms": quantile(trivial_latency, 0.5),
        "typename_p99_ms": quantile(trivial_latency, 0.99),
        "typename_rps": round(trivial_rps, 1),
        "ratio_cached_to_typename": round(feed_rps / trivial_rps, 3),
        "steady_rps": steady_rate,
        "steady_cached_p50_ms": quantile(steady, 0.5),
        "steady_cached_p99_ms": quantile(steady, 0.99),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stories", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--uncached", type=int, default=200, help="readers whose first page is measured uncached")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--load", type=float, default=0.5, help="steady load, as a share of the cached capacity")
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
