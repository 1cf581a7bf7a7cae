"""Feed queries/s with 1, 2 and 4 API processes: `newsagg up --api N` on one seeded database, ratios against one.

bench.feed's corpus (`--stories` stories of ~10 articles over 300 sources, `--users` readers with interests,
follows, mutes and history) in a scratch database; for each N, `newsagg up --api N --workers 1` on it (N > 1: the
processes behind HAProxy, as operators run them; N = 1: the API alone on the port, no balancer) and `--connections`
keep-alive connections, each a signed-in reader asking for their first feed page (cached after the first) for
`--seconds`. Then one API process behind HAProxy all the same (up's configuration): what the balancer's hop costs
alone. One API process is measured again at the end: the baseline is the mean of both runs, and `drift` says how
much the machine's other load moved it meanwhile. The load client runs in this process, on the same cores.

    python -m bench.scaling [--stories 2000] [--users 200] [--connections 32] [--seconds 10] [--apis 1 2 4]

The last line is one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import create_async_engine

from app.db import migrate
from app.runtime.balancer import Backends, haproxy_binary, haproxy_config
from app.runtime.processes import free_port
from bench.feed import FEED_QUERY, REDIS_URL, ROOT, Client, load, populate, request
from bench.ingest import scratch_database


def start(database_url: str, apis: int, port: int, home: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": REDIS_URL, "NEWSAGG_HOME": str(home),
           "NEWSAGG_GRAPHIQL": "false", "NEWSAGG_RATE_LIMIT_POINTS": str(10**9)}  # fmt: skip
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


async def feed_rate(url: str, apis: int, tokens: list[str], args: argparse.Namespace, *, hop: bool = False) -> float:
    """Cached feed requests/s with `apis` API processes (`hop`: one, behind HAProxy all the same)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as home:
        processes = [start(url, apis, port, Path(home))]
        try:
            await until_serving(port, processes[0], apis)
            if hop:
                balancer, port = balancer_in_front(port, Path(home))
                processes.insert(0, balancer)
                await until_serving(port, processes[1], apis)
            feeds = [request(port, FEED_QUERY, token, {"first": 20}) for token in tokens]
            await load(port, feeds, 2)  # each reader's feed ranked and cached, every process warm
            _, rate = await load(port, feeds, args.seconds)
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
                process.wait(60)
    print(f"{apis} API process(es){' behind HAProxy' if hop else ''}: {rate:.1f} feed queries/s", file=sys.stderr,
          flush=True)  # fmt: skip
    return rate


async def main(args: argparse.Namespace) -> dict[str, Any]:
    redis = Redis.from_url(REDIS_URL)
    await redis.flushdb()
    async with scratch_database() as url:
        engine = create_async_engine(url)
        await migrate.upgrade(engine)
        async with engine.begin() as connection:
            tokens = await populate(connection, args.stories, args.users, random.Random(7))
        await engine.dispose()
        started = time.perf_counter()
        rates = {n: await feed_rate(url, n, tokens[: args.connections], args) for n in args.apis}
        hop = await feed_rate(url, 1, tokens[: args.connections], args, hop=True)
        again = await feed_rate(url, args.apis[0], tokens[: args.connections], args)
    await redis.flushdb()
    await redis.aclose()
    baseline = (rates[args.apis[0]] + again) / 2
    return {"cores": os.cpu_count(), "stories": args.stories, "connections": args.connections,
            "seconds": args.seconds, **{f"api_{n}_rps": round(rate, 1) for n, rate in rates.items()},
            **{f"ratio_{n}_to_{args.apis[0]}": round(rate / baseline, 3) for n, rate in rates.items()},
            "api_1_behind_haproxy_rps": round(hop, 1), "ratio_haproxy_hop": round(hop / baseline, 3),
            "drift": round(again / rates[args.apis[0]], 3), "wall_s": round(time.perf_counter() - started)}  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stories", type=int, default=2000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--apis", type=int, nargs="+", default=[1, 2, 4], help="API process counts; the first is the "
                        "baseline")  # fmt: skip
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
