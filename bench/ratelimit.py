"""What the rate limiter adds to a request: the API with and without it, in one run.

Two `newsagg api` processes on the same Redis, one metering (an anonymous budget too large to refuse, so every
request pays the full charge: the Lua script's round trip, the headers) and one with NEWSAGG_RATE_LIMIT_ENABLED=false.
One keep-alive client asks both `{ __typename }` (no database: the request is as cheap as the API makes one, so the
limiter's share is at its largest), request by request in turn so machine noise hits both alike; p50/p99 per request,
the difference, and a bare Redis PING beside them (the floor of any limiter that asks a shared Redis; on a loaded
machine, the scheduler's wake-ups dominate it). Redis: NEWSAGG_BENCH_REDIS_URL, else redis://127.0.0.1:6379/14
(emptied before and after).

    python -m bench.ratelimit [--requests 10000]
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
from typing import Any

import httpx
from redis.asyncio import Redis

from app.runtime.processes import free_port

REDIS_URL = os.environ.get("NEWSAGG_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
BODY = {"query": "{ __typename }"}


@contextlib.contextmanager
def api(metered: bool) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "REDIS_URL": REDIS_URL, "DATABASE_URL": "postgresql://bench@127.0.0.1:1/none",
           "NEWSAGG_RATE_LIMIT_ENABLED": str(metered).lower(), "NEWSAGG_RATE_LIMIT_ANONYMOUS_POINTS": "1000000000",
           "NEWSAGG_GRAPHIQL": "false"}  # fmt: skip
    process = subprocess.Popen([sys.executable, "-m", "app", "--log-level", "warning", "api", "--port", str(port)],
                               env=env)  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


async def ready(client: httpx.AsyncClient) -> None:
    for _ in range(300):
        with contextlib.suppress(httpx.TransportError):
            if (await client.post("/graphql", json=BODY)).status_code == 200:
                return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{client.base_url} did not start")


async def timed(client: httpx.AsyncClient, metered: bool) -> float:
    started = time.perf_counter()
    response = await client.post("/graphql", json=BODY)
    taken = time.perf_counter() - started
    if response.status_code != 200 or ("x-ratelimit-remaining" in response.headers) != metered:
        raise RuntimeError(f"unexpected answer: {response.status_code} {response.headers} {response.text}")
    return taken


async def round_trip(redis: Redis) -> float:
    started = time.perf_counter()
    await redis.ping()
    return time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(urls: dict[bool, str], redis: Redis, requests: int) -> dict[Any, list[float]]:
    """Request by request, the two servers in turn (which goes first alternates), and a bare Redis round trip from
    this process beside them: the floor of any limiter that asks a shared Redis."""
    clients = {metered: httpx.AsyncClient(base_url=url) for metered, url in urls.items()}
    taken: dict[Any, list[float]] = {True: [], False: [], "redis": []}
    try:
        for client in clients.values():
            await ready(client)
        for i in range(200 + requests):  # the first 200: warm-up (connections, caches, the script loaded)
            for metered in (True, False) if i % 2 else (False, True):
                took = await timed(clients[metered], metered)
                if i >= 200:
                    taken[metered].append(took)
            rtt = await round_trip(redis)
            if i >= 200:
                taken["redis"].append(rtt)
        return taken
    finally:
        for client in clients.values():
            await client.aclose()


async def main(requests: int) -> dict[str, Any]:
    redis = Redis.from_url(REDIS_URL)
    await redis.flushdb()
    with api(metered=True) as metered_url, api(metered=False) as plain_url:
        taken = await measure({True: metered_url, False: plain_url}, redis, requests)
    await redis.flushdb()
    await redis.aclose()
    ms = {(kind, q): percentile(taken[kind], q) * 1000 for kind in (True, False, "redis") for q in (0.5, 0.99)}
    return {
        "requests_each": requests,
        "with_limiter_p50_ms": round(ms[True, 0.5], 3), "with_limiter_p99_ms": round(ms[True, 0.99], 3),
        "without_p50_ms": round(ms[False, 0.5], 3), "without_p99_ms": round(ms[False, 0.99], 3),
        "added_p50_ms": round(ms[True, 0.5] - ms[False, 0.5], 3),
        "added_p99_ms": round(ms[True, 0.99] - ms[False, 0.99], 3),
        "ratio_p50": round(ms[True, 0.5] / ms[False, 0.5], 2), "ratio_p99": round(ms[True, 0.99] / ms[False, 0.99], 2),
        "redis_round_trip_p50_ms": round(ms["redis", 0.5], 3), "redis_round_trip_p99_ms": round(ms["redis", 0.99], 3),
        "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
    }  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=10_000, help="requests to each server")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.requests))))
