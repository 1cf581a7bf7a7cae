"""A share link's redirect, served from the Redis cache, against a bare Starlette redirect, in one run.

Two uvicorn servers on loopback, started alike: `newsagg api` (the whole app: its middleware, the code's signature
checked, one Redis script that reads the destination and counts the click) on a scratch database, and a Starlette app
of one route that answers the same 302 and does nothing else. One keep-alive httpx client asks both, request by
request in turn (which goes first alternates) so machine noise hits both alike. Every share-link request comes from
another client address (X-Forwarded-For from a trusted proxy), so every one is a new click: counted, never skipped
as a repeat. Beside the cached path, the first visit of each of `--cold` fresh links (a cache miss: PostgreSQL, then
Redis filled). p50/p99 per request and the ratio of the share link's p99 to the bare redirect's; the goal is a p99
under 5 ms from cache. PostgreSQL: NEWSAGG_BENCH_DATABASE_URL, else 127.0.0.1:5432 (or embedded). Redis:
NEWSAGG_BENCH_REDIS_URL, else redis://127.0.0.1:6379/14 (emptied before and after).

    python -m bench.share_links [--requests 5000] [--cold 200]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import Route

from app.articles.models import Article
from app.db.engine import session_factory
from app.db.migrate import upgrade
from app.runtime.processes import free_port
from app.settings import Settings
from app.sharing.keys import SigningKey
from app.sharing.models import ShareTargetKind
from app.sharing.service import share
from app.sources.service import SourceRequest, create_source
from app.users.models import User
from bench.ingest import scratch_database

REDIS_URL = os.environ.get("NEWSAGG_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"
TARGET = "https://news.example/2026/11/26/harbour-bridge-reopens"
GOAL_P99_MS = 5.0
WARM_UP = 200


async def bare_redirect(request: Request) -> RedirectResponse:
    return RedirectResponse(TARGET, status_code=302)


bare_app = Starlette(routes=[Route("/s/{code}", bare_redirect)])


@contextlib.contextmanager
def server(argv: list[str], env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, *argv, "--port", str(port)], env={**os.environ, **env})
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


async def links(database_url: str, count: int) -> list[str]:
    """`count` share codes, each to an article of its own (the first at TARGET)."""
    engine = create_async_engine(database_url)
    await upgrade(engine)
    key = SigningKey(session_factory(engine))
    async with session_factory(engine).begin() as session:
        settings = Settings(_env_file=None, allow_loopback_sources=True)  # type: ignore[call-arg]
        request = SourceRequest(feed_url="http://127.0.0.1:9/bench", name="Bench")
        source = await create_source(session, settings, request, resolve=False)
        reader = User(email="bench@example.com", password_hash="-")
        articles = [Article(source_id=source.id, external_id=f"e{k}", url=TARGET if k == 0 else f"{TARGET}-{k}",
                            title=f"Story {k}", published_at=datetime.now(UTC), content_hash=k)
                    for k in range(count)]  # fmt: skip
        session.add_all([reader, *articles])
        await session.flush()
        codes = []
        for article in articles:
            shared = await share(session, reader.id, ShareTargetKind.ARTICLE, article.id, admit=_free, key=key)
            codes.append(shared.link.code)
    await engine.dispose()
    return codes


async def _free() -> None:
    return None


async def ready(client: httpx.AsyncClient, path: str) -> None:
    for _ in range(300):
        with contextlib.suppress(httpx.TransportError):
            if (await client.get(path)).status_code == 302:
                return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{client.base_url} did not start")


async def timed(client: httpx.AsyncClient, path: str, visitor: int) -> float:
    headers = {"x-forwarded-for": f"10.{visitor >> 16 & 255}.{visitor >> 8 & 255}.{visitor & 255}"}
    started = time.perf_counter()
    response = await client.get(path, headers=headers)
    taken = time.perf_counter() - started
    if response.status_code != 302 or not response.headers["location"].startswith(TARGET):
        raise RuntimeError(f"unexpected answer: {response.status_code} {response.headers}")
    return taken


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def measure(share_url: str, bare_url: str, codes: list[str], requests: int) -> dict[str, list[float]]:
    options: dict[str, Any] = {"headers": {"user-agent": BROWSER}, "follow_redirects": False}
    async with (
        httpx.AsyncClient(base_url=share_url, **options) as ours,
        httpx.AsyncClient(base_url=bare_url, **options) as bare,
    ):
        hot = f"/s/{codes[0]}"
        await ready(ours, hot)
        await ready(bare, hot)
        taken: dict[str, list[float]] = {"share": [], "bare": [], "cold": []}
        for i in range(WARM_UP + requests):
            for name in ("share", "bare") if i % 2 else ("bare", "share"):
                took = await timed(ours if name == "share" else bare, hot, i)
                if i >= WARM_UP:
                    taken[name].append(took)
        for k, code in enumerate(codes[1:]):  # each fresh link's first visit: not cached yet
            taken["cold"].append(await timed(ours, f"/s/{code}", k))
        return taken


async def main(requests: int, cold: int) -> dict[str, Any]:
    redis = Redis.from_url(REDIS_URL)
    await redis.flushdb()
    try:
        async with scratch_database() as database_url:
            codes = await links(database_url, cold + 1)
            env = {"DATABASE_URL": database_url, "REDIS_URL": REDIS_URL, "NEWSAGG_GRAPHIQL": "false",
                   "NEWSAGG_RATE_LIMIT_TRUSTED_PROXIES": '["127.0.0.1"]'}  # fmt: skip
            api = ["-m", "app", "--log-level", "warning", "api"]
            bare = ["-m", "uvicorn", "bench.share_links:bare_app", "--log-level", "warning", "--no-proxy-headers",
                    "--lifespan", "off"]  # fmt: skip
            with server(api, env) as share_url, server(bare, {}) as bare_url:
                taken = await measure(share_url, bare_url, codes, requests)
            counted = sum(int(v) for v in (await redis.hgetall("newsagg:share:pending")).values())  # type: ignore[misc]
    finally:
        await redis.flushdb()
        await redis.aclose()
    ms = {(name, q): percentile(values, q) for name, values in taken.items() for q in (0.5, 0.99)}
    return {
        "requests_each": requests, "cold_links": cold,
        "share_p50_ms": round(ms["share", 0.5], 3), "share_p99_ms": round(ms["share", 0.99], 3),
        "bare_p50_ms": round(ms["bare", 0.5], 3), "bare_p99_ms": round(ms["bare", 0.99], 3),
        "ratio_p50": round(ms["share", 0.5] / ms["bare", 0.5], 2),
        "ratio_p99": round(ms["share", 0.99] / ms["bare", 0.99], 2),
        "cold_p50_ms": round(ms["cold", 0.5], 3), "cold_p99_ms": round(ms["cold", 0.99], 3),
        "clicks_counted": counted, "goal_p99_ms": GOAL_P99_MS, "goal_met": ms["share", 0.99] < GOAL_P99_MS,
        "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
    }  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=5000, help="requests to each server, after a warm-up")
    parser.add_argument("--cold", type=int, default=200, help="fresh links visited once each (cache misses)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.requests, args.cold))))
