"""GraphQL request throughput with and without the parser/validation caches, in one run.

The document is the Sources operation that clients copy (graphql/Sources.graphql), with its root field under
`@include(if: false)`: every request still pays parse, validation and the HTTP/ASGI path, but touches no database,
so the figure isolates what the caches save. Rounds alternate between the two apps to even out machine noise.

    python bench/graphql_caches.py [--requests 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

import httpx

from app.api.asgi import create_app
from app.services import Services
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
FIELD = "sources(first: $first, after: $after, status: $status) {"


def bench_document() -> str:
    text = (ROOT / "graphql" / "Sources.graphql").read_text()
    assert FIELD in text
    return text.replace(FIELD, FIELD[:-1] + "@include(if: false) {")


async def requests_per_second(client: httpx.AsyncClient, body: dict[str, object], n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        response = await client.post("/graphql", json=body)
        if response.status_code != 200 or "errors" in response.json():
            raise RuntimeError(response.text)
    return n / (time.perf_counter() - started)


async def main(requests: int, rounds: int) -> dict[str, float]:
    # Lazy engine and Redis client: nothing connects, since the document resolves no field that needs them.
    base = Settings(_env_file=None, database_url="postgresql://bench@127.0.0.1:1/none",  # type: ignore[call-arg]
                    redis_url="redis://127.0.0.1:1/0")  # fmt: skip
    variants = {"cached": base, "uncached": base.model_copy(update={"graphql_cache_size": 0})}
    clients = {
        name: httpx.AsyncClient(transport=httpx.ASGITransport(create_app(s, Services.open(s))), base_url="http://b")
        for name, s in variants.items()
    }
    body = {"query": bench_document(), "variables": {"first": 10}}
    results: dict[str, list[float]] = {name: [] for name in clients}
    for client in clients.values():  # warm-up
        await requests_per_second(client, body, 50)
    for _ in range(rounds):
        for name, client in clients.items():
            results[name].append(await requests_per_second(client, body, requests))
    for client in clients.values():
        await client.aclose()
    cached, uncached = statistics.median(results["cached"]), statistics.median(results["uncached"])
    return {"cached_rps": round(cached, 1), "uncached_rps": round(uncached, 1), "speedup": round(cached / uncached, 2),
            "requests_per_round": requests, "rounds": rounds}  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.requests, args.rounds))))
