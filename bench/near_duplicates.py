"""Near-duplicate candidate lookup at scale: LSH band keys vs the design documents' full `bit_count` scan.

Loads N random 64-bit SimHash fingerprints (default 1M) into a scratch PostgreSQL table shaped like `articles`,
plants near-copies (1-3 bits away) of some of them, then times, for the same queries:
  - `gin_bands`: our path (app/articles/understanding.py): band keys `&&` a GIN index, exact Hamming on the rows;
  - `memory_bands`: the same LSH in process memory (a dict per band), as a worker-local cache would hold it;
  - `bit_count_scan`: the documents' baseline, `bit_count((simhash # x)::bit(64)) <= 3` over every row.
Each must find every planted copy. Prints one JSON object: p50/p99 per method and the ratios to the scan.

    python -m bench.near_duplicates [--fingerprints 1000000] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections import defaultdict

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from app.articles.simhash import NEAR_DUPLICATE_DISTANCE, bands, hamming
from bench.ingest import scratch_database

SIGNED = 1 << 63


def signed(value: int) -> int:
    return value - (1 << 64) if value >= SIGNED else value


def near_copy(rng: random.Random, fingerprint: int) -> int:
    flipped = fingerprint & ((1 << 64) - 1)
    for bit in rng.sample(range(64), rng.randint(1, NEAR_DUPLICATE_DISTANCE)):
        flipped ^= 1 << bit
    return signed(flipped)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 3),
            "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3)}  # fmt: skip


async def main(count: int, queries: int) -> dict[str, object]:
    rng = random.Random(42)
    fingerprints = [signed(rng.getrandbits(64)) for _ in range(count)]
    probes = [(near_copy(rng, fingerprints[i]), i + 1) for i in rng.sample(range(count), queries)]
    async with scratch_database() as url:
        engine = create_async_engine(url)
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE fp (id bigint PRIMARY KEY, simhash bigint, bands int[])"))
            for start in range(0, count, 50_000):
                chunk = fingerprints[start : start + 50_000]
                insert = "INSERT INTO fp (id, simhash) SELECT * FROM unnest(CAST(:i AS bigint[]), CAST(:s AS bigint[]))"
                await connection.execute(
                    text(insert), {"i": list(range(start + 1, start + len(chunk) + 1)), "s": chunk}
                )
            # the same keys as app.articles.simhash.bands: band i's 16 bits, tagged with i
            keys = ", ".join(f"({i} << 16) | ((simhash >> {16 * i}) & 65535)::int" for i in range(4))
            await connection.execute(text(f"UPDATE fp SET bands = ARRAY[{keys}]"))
            await connection.execute(text("CREATE INDEX fp_bands ON fp USING gin (bands)"))
            await connection.execute(text("ANALYZE fp"))
        memory: dict[int, list[int]] = defaultdict(list)
        for index, fingerprint in enumerate(fingerprints, start=1):
            for key in bands(fingerprint):
                memory[key].append(index)

        timings: dict[str, list[float]] = {"gin_bands": [], "memory_bands": [], "bit_count_scan": []}
        async with engine.connect() as connection:
            for probe, expected in probes:
                started = time.perf_counter()
                rows = await connection.execute(text("SELECT id, simhash FROM fp WHERE bands && CAST(:k AS int[])"),
                                                {"k": bands(probe)})  # fmt: skip
                found = {r.id for r in rows if hamming(r.simhash, probe) <= NEAR_DUPLICATE_DISTANCE}
                timings["gin_bands"].append(time.perf_counter() - started)
                assert expected in found

                started = time.perf_counter()
                ids = {i for key in bands(probe) for i in memory.get(key, ())}
                found = {i for i in ids if hamming(fingerprints[i - 1], probe) <= NEAR_DUPLICATE_DISTANCE}
                timings["memory_bands"].append(time.perf_counter() - started)
                assert expected in found

            for probe, expected in probes[: max(queries // 10, 5)]:  # the scan is slow: fewer of them
                started = time.perf_counter()
                rows = await connection.execute(
                    text("SELECT id FROM fp WHERE bit_count((simhash # :x)::bit(64)) <= :d"),
                    {"x": probe, "d": NEAR_DUPLICATE_DISTANCE},
                )  # fmt: skip
                assert expected in {r.id for r in rows}
                timings["bit_count_scan"].append(time.perf_counter() - started)
        await engine.dispose()
    result: dict[str, object] = {name: percentiles(samples) for name, samples in timings.items()}
    scan = statistics.median(timings["bit_count_scan"])
    result["speedup_gin_vs_scan"] = round(scan / statistics.median(timings["gin_bands"]), 1)
    result["speedup_memory_vs_scan"] = round(scan / statistics.median(timings["memory_bands"]), 1)
    result["fingerprints"] = count
    result["queries"] = queries
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fingerprints", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.fingerprints, args.queries))))
