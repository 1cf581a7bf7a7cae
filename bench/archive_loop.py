"""The event loop while the archive compresses large bodies, and what the reference cache saves; no database.

Large feed bodies (synthetic RSS of `--mb` MB each, varied words so zstd has work to do) are archived as a worker
archives them: each compressed against the body before it (the reference, as one in ten is), twice in the same run,
alternating: once on the event loop (the baseline: how the archive worked before) and once through the archive's own
`off_loop_if_large` (the parser thread for a body of 64 KB or more). Meanwhile a ticker asks the loop to wake it every
millisecond and records how late it woke: the loop lag other requests and jobs of the process would see. Then the
reference's cost per fetch: decompressed and digested anew for every body (as before the cache: read, decompress,
dictionary) against taken from the process's ReferenceCache.

    python -m bench.archive_loop [--bodies N] [--mb MB] [--level L]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from app.archive.compression import compress, dictionary
from app.archive.references import ReferenceCache, prepare
from app.archive.service import off_loop_if_large

TICK_S = 0.001


def _bodies(count: int, megabytes: float, seed: int = 7) -> list[bytes]:
    """RSS documents of about `megabytes` each, each a little different from the one before (as a live feed)."""
    rng = random.Random(seed)
    words = [f"w{rng.getrandbits(40):x}" for _ in range(20_000)]
    per_item = 1000
    base = [" ".join(rng.choices(words, k=80)) for _ in range(int(megabytes * 1e6 / per_item))]
    bodies = []
    for n in range(count):
        items = base[n:] + [" ".join(rng.choices(words, k=80)) for _ in range(n)]
        parts = "".join(f"<item><title>{n}-{k}</title><description>{t}</description></item>"
                        for k, t in enumerate(items))  # fmt: skip
        bodies.append(f'<?xml version="1.0"?><rss version="2.0"><channel>{parts}</channel></rss>'.encode())
    return bodies


async def _lag_while(work: Callable[[], Awaitable[None]]) -> list[float]:
    """How late (ms) a 1 ms ticker woke, each time, while `work` ran."""
    lags: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            await asyncio.sleep(TICK_S)
            lags.append((time.perf_counter() - started - TICK_S) * 1000)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    await work()
    stop.set()
    await task
    return lags


async def _archive(bodies: list[bytes], level: int, off_loop: bool) -> None:
    against = dictionary(bodies[0], level=level)
    for body in bodies[1:]:
        work = partial(compress, body, level=level, reference=against)
        if off_loop:
            await off_loop_if_large(len(body), work)
        else:
            work()
            await asyncio.sleep(0)  # the loop's next turn, as the next statement of the fetch's transaction gives it


def _summary(lags: list[float]) -> dict[str, float]:
    ordered = sorted(lags)
    return {"max_ms": round(ordered[-1], 2), "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 2),
            "median_ms": round(statistics.median(ordered), 3), "ticks": len(ordered)}  # fmt: skip


def _reference_costs(bodies: list[bytes], level: int) -> dict[str, float]:
    frame = compress(bodies[0], level=level)
    cache = ReferenceCache(budget_bytes=256 * 1024 * 1024)
    cache.put(prepare(1, frame, level=level))
    started = time.perf_counter()
    for _ in bodies[1:]:
        prepare(1, frame, level=level)  # every fetch: decompress the reference and digest it again
    anew = (time.perf_counter() - started) / (len(bodies) - 1)
    started = time.perf_counter()
    for _ in bodies[1:]:
        assert cache.get(1) is not None
    cached = (time.perf_counter() - started) / (len(bodies) - 1)
    return {"reference_anew_ms_per_fetch": round(anew * 1000, 2), "reference_cached_ms_per_fetch":
            round(cached * 1000, 4), "ratio_anew_to_cached": round(anew / max(cached, 1e-9), 1)}  # fmt: skip


async def main(count: int, megabytes: float, level: int) -> dict[str, Any]:
    bodies = _bodies(count, megabytes)
    runs: dict[str, list[float]] = {"on_loop": [], "off_loop": []}
    for _ in range(2):  # alternating, so that a noisy neighbour slows both alike
        for name in runs:
            runs[name] += await _lag_while(partial(_archive, bodies, level, name == "off_loop"))
    on, off = _summary(runs["on_loop"]), _summary(runs["off_loop"])
    return {"bodies": count, "body_mb": round(len(bodies[1]) / 1e6, 2), "level": level,
            "loop_lag_on_loop": on, "loop_lag_off_loop": off,
            "ratio_max_lag_on_to_off": round(on["max_ms"] / max(off["max_ms"], 0.01), 1),
            **_reference_costs(bodies, level)}  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bodies", type=int, default=12)
    parser.add_argument("--mb", type=float, default=2.0, help="size of each body (default 2 MB)")
    parser.add_argument("--level", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.bodies, args.mb, args.level))))
