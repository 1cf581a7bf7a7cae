"""Feed queries/s with 1, 2 and 4 API processes: `newsagg up --api N` on one seeded database, ratios against one.

bench.feed's corpus (`--stories` stories of ~10 articles over 300 sources, `--users` readers with interests,
follows, mutes and history) in a PostgreSQL of its own (embedded); for each N, `newsagg up --api N --workers 1` on
it (N > 1: the processes behind HAProxy, as operators run them; N = 1: the API alone on the port) and `--connections`
keep-alive connections, each a signed-in reader asking for their first feed page (cached after the first) for
`--seconds` in all, plus one API process behind HAProxy all the same (up's configuration): what the balancer's hop
costs alone. Every setup runs at once (idle but for the one loaded), and `--rounds` rounds go through them in turn,
so the machine's other load falls on all alike; the figures are each setup's median round, the ratios against one
API process. The load client runs in this process, on the same cores.

    python -m bench.scaling [--stories 2000] [--users 200] [--connections 32] [--seconds 20] [--rounds 5]
                            [--apis 1 2 4]

The last line is one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import create_async_engine

from app.db import migrate
from app.db.scratch import scratch_database
from app.runtime.balancer import Backends, haproxy_binary, haproxy_config
from app.runtime.embedded import EmbeddedPostgres
from app.runtime.processes import free_port
from bench.feed import FEED_QUERY, REDIS_URL, ROOT, Client, load, populate, request
from bench.ingest import server_of_its_own


def start(database_url: str, apis: int, port: int, home: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": REDIS_URL, "NEWSAGG_HOME": str(home),
           "NEWSAGG_GRAPHIQL": "false", "NEWSAGG_RATE_LIMIT_POINTS": str(10**9),
           "NEWSAGG_DATABASE_POOL_SIZE": "5"}  # fmt: skip
    command = [sys.executable, "-m", "app", "--log-level", "WARNING", "up", "--api", str(apis), "--workers", "1",
               "--port", str(port)]  # fmt: skip
    return subprocess.Popen(command, env=env, cwd=ROOT, stdin=subprocess.DEVNULL)


async def until_serving(port: int, process: subprocess.Popen[bytes], apis: int) -> None:
    """Until every API process answers: N answers in a row through the balancer's round robin."""
    answered = 0
    for _ in range(1200):
        if process.poll() is not None:
            raise RuntimeError(f"newsagg up --api {apis} exited with status {process.returncode}")
        try:
            client = Client(port)
            await client.open()
            await client.post(request(port, "{ __typename }", None))
            client.close()
            answered += 1
            if answered >= 4 * apis:
                return
        except (OSError, RuntimeError, asyncio.IncompleteReadError):
            answered = 0
            await asyncio.sleep(0.1)
    raise RuntimeError(f"newsagg up --api {apis} did not start serving")


def balancer_in_front(api_port: int, home: Path) -> tuple[subprocess.Popen[bytes], int]:
    """HAProxy with up's configuration before one API process: what the balancer's hop costs alone."""
    port, config = free_port(), home / "haproxy.cfg"
    config.write_text(haproxy_config(f"127.0.0.1:{port}", Backends(servers=[("api-1", f"127.0.0.1:{api_port}")])))
    binary = haproxy_binary()
    assert binary is not None, "no haproxy binary (apt-get install haproxy)"
    return subprocess.Popen([binary, "-db", "-f", str(config)], stdin=subprocess.DEVNULL), port


@contextlib.asynccontextmanager
async def tree(url: str, apis: int, *, hop: bool = False) -> AsyncIterator[int]:
    """`newsagg up --api N` serving (`hop`: one API process behind HAProxy all the same); yields the port to load."""
    with tempfile.TemporaryDirectory() as home:
        port = free_port()
        processes = [start(url, apis, port, Path(home))]
        try:
            await until_serving(port, processes[0], apis)
            if hop:
                balancer, port = balancer_in_front(port, Path(home))
                processes.insert(0, balancer)
                await until_serving(port, processes[1], apis)
            yield port
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
                process.wait(60)


def label(apis: int, hop: bool) -> str:
    return f"api_{apis}_behind_haproxy" if hop else f"api_{apis}"


async def measure(url: str, tokens: list[str], args: argparse.Namespace) -> dict[str, list[float]]:
    """Every setup serving at once, idle but for the one loaded: rounds go through them in turn, so the machine's
    other load falls on all alike."""
    setups = [(n, False) for n in args.apis] + [(args.apis[0], True)]
    rates: dict[str, list[float]] = {label(*setup): [] for setup in setups}
    async with contextlib.AsyncExitStack() as stack:
        ports = {label(n, hop): await stack.enter_async_context(tree(url, n, hop=hop)) for n, hop in setups}
        feeds = {name: [request(port, FEED_QUERY, t, {"first": 20}) for t in tokens] for name, port in ports.items()}
        for name, port in ports.items():
            await load(port, feeds[name], 2)  # each reader's feed ranked and cached, every process warm
        for _ in range(args.rounds):
            for name, port in ports.items():
                rates[name].append((await load(port, feeds[name], args.seconds / args.rounds))[1])
    return rates


def own_postgres() -> contextlib.AbstractContextManager[str]:
    """A PostgreSQL of the bench's own (embedded, 200 connections): every setup's pools at once would take a shared
    server's whole `max_connections` from its other users."""
    return server_of_its_own(lambda folder: EmbeddedPostgres(folder / "postgres"))


async def main(args: argparse.Namespace, admin_url: str) -> dict[str, Any]:
    redis = Redis.from_url(REDIS_URL)
    await redis.flushdb()
    async with scratch_database(admin_url, "newsagg_bench") as url:
        engine = create_async_engine(url)
        await migrate.upgrade(engine)
        async with engine.begin() as connection:
            tokens = await populate(connection, args.stories, args.users, random.Random(7))
        await engine.dispose()
        started = time.perf_counter()
        rates = await measure(url, tokens[: args.connections], args)
    await redis.flushdb()
    await redis.aclose()
    medians = {name: statistics.median(values) for name, values in rates.items()}
    baseline = medians[label(args.apis[0], False)]
    for name, values in rates.items():
        print(f"{name}: {' '.join(f'{v:.0f}' for v in values)} feed queries/s", file=sys.stderr)
    return {"cores": os.cpu_count(), "stories": args.stories, "connections": args.connections,
            "seconds_each": args.seconds, "rounds": args.rounds,
            **{f"{name}_rps": round(rate, 1) for name, rate in medians.items()},
            **{f"ratio_{name}_to_{label(args.apis[0], False)}": round(rate / baseline, 3)
               for name, rate in medians.items()},
            "wall_s": round(time.perf_counter() - started)}  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stories", type=int, default=2000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20, help="load per setup, over all rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--apis", type=int, nargs="+", default=[1, 2, 4], help="API process counts; the first is the "
                        "baseline")  # fmt: skip
    with own_postgres() as admin:
        print(json.dumps(asyncio.run(main(parser.parse_args(), admin))))
