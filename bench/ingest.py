"""Ingest throughput on real feeds: every snapshot of the archive through the real parse-and-store path.

Each snapshot goes through `ingest_body` (the path a fetched or pushed document takes after the network: DOCTYPE
stripping, feedparser in a thread, mapping, `INSERT ... ON CONFLICT DO NOTHING`, schedule and fetch log) into a
scratch PostgreSQL database, feeds concurrently and each feed's snapshots in time order, as a worker would see
them. The baseline is bare `feedparser.parse` of the same bytes, timed in the same run: chunk by chunk,
alternating with the pipeline, so that a noisy neighbour slows both alike.

    python bench/ingest.py [--archive PATH] [--limit N] [--concurrency N]

PostgreSQL: NEWSAGG_BENCH_DATABASE_URL, else 127.0.0.1:5432 if it answers, else an embedded server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import feedparser
from sqlalchemy import func, select

from app.db import scratch
from app.db.engine import create_engine, session_factory
from app.db.migrate import upgrade
from app.ingest.refresh import ingest_body
from app.runtime.embedded import EmbeddedPostgres, EmbeddedRedis
from app.settings import Settings, to_asyncpg_url
from app.sources import repository as sources
from app.sources.models import FetchLog

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARCHIVE = ROOT.parent / "shared" / "data" / "feeds" / "gesab001_headlines_all_snapshots.tar.xz"


def load_snapshots(archive: Path, limit: int | None) -> list[tuple[str, str, bytes]]:
    """(feed, snapshot name, body) in time order (snapshot names start with their UTC timestamp)."""
    snapshots = []
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 4 and parts[1] in ("rss", "youtube_atom"):
                body = tar.extractfile(member)
                assert body is not None
                snapshots.append((f"{parts[1]}/{parts[2]}", parts[3], body.read()))
    snapshots.sort(key=lambda s: (s[1], s[0]))
    return snapshots[:limit] if limit else snapshots


@contextlib.asynccontextmanager
async def scratch_database(keep: bool = False) -> AsyncIterator[str]:
    """A new database, dropped afterwards. With `keep` it stays for inspection (its name goes to stderr), so it is made
    on the server of NEWSAGG_BENCH_DATABASE_URL or 127.0.0.1:5432, never on an embedded one, which ends with the run."""
    admin = os.environ.get("NEWSAGG_BENCH_DATABASE_URL") or "postgresql://postgres@127.0.0.1:5432/postgres"
    with contextlib.ExitStack() as stack:
        try:
            socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
        except OSError:
            if "NEWSAGG_BENCH_DATABASE_URL" not in os.environ and not keep:
                embedded = EmbeddedPostgres(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "pg")
                embedded.start()
                stack.callback(embedded.stop)
                admin = embedded.url()
        async with scratch.scratch_database(to_asyncpg_url(admin), "newsagg_bench", keep=keep) as url:
            if keep:
                name = url.rsplit("/", 1)[1]
                print(f'keep: the database {name} stays; drop it with DROP DATABASE "{name}" WITH (FORCE)',
                      file=sys.stderr, flush=True)  # fmt: skip
            yield url


@contextlib.contextmanager
def server_of_its_own(make: Callable[[Path], EmbeddedPostgres | EmbeddedRedis]) -> Iterator[str]:
    """A server made by `make` in a temporary folder, started; stopped afterwards with all it held: its URL."""
    with tempfile.TemporaryDirectory() as folder:
        server = make(Path(folder))
        server.start()
        try:
            yield server.url()
        finally:
            server.stop()


def scratch_redis() -> contextlib.AbstractContextManager[str]:
    """A redis-server of the run's own: the queues, job keys and counters a run's workers write (arq's keys are not
    under one prefix) go with it, never left in a shared Redis."""
    return server_of_its_own(lambda folder: EmbeddedRedis(folder / "redis"))


def bare_feedparser_seconds(snapshots: list[tuple[str, str, bytes]]) -> float:
    started = time.perf_counter()
    for _, _, body in snapshots:
        feedparser.parse(body)
    return time.perf_counter() - started


class Pipeline:
    """A scratch database with one source per feed; `replay` ingests a chunk of snapshots."""

    def __init__(self, url: str, concurrency: int) -> None:
        self.settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
        # the worker's engine (jobs/worker.py): no pre-ping
        self.engine = create_engine(self.settings.model_copy(update={"database_pool_size": concurrency + 2}),
                                    pre_ping=False)  # fmt: skip
        self.db = session_factory(self.engine)
        self.gate = asyncio.Semaphore(concurrency)
        self.source_ids: dict[str, int] = {}
        self.new_articles = 0

    async def prepare(self, feeds: set[str]) -> None:
        await upgrade(self.engine)
        async with self.db.begin() as session:
            for feed in sorted(feeds):
                new = sources.NewSource(feed_url=f"http://bench.invalid/{feed}", name=feed, site_url=None,
                                        category=None, language=None, authority=0.5, min_interval_s=60,
                                        max_interval_s=900)  # fmt: skip
                source = await sources.insert_source(session, new)
                assert source is not None
                self.source_ids[feed] = source.id

    async def replay(self, chunk: list[tuple[str, str, bytes]]) -> float:
        by_feed: dict[str, list[bytes]] = defaultdict(list)
        for feed, _, body in chunk:
            by_feed[feed].append(body)

        async def one_feed(feed: str) -> None:
            for body in by_feed[feed]:
                async with self.gate:
                    outcome = await ingest_body(self.engine, self.settings, self.source_ids[feed], body)
                self.new_articles += len(outcome.new_article_ids)

        started = time.perf_counter()
        await asyncio.gather(*(one_feed(feed) for feed in by_feed))
        return time.perf_counter() - started

    async def totals(self) -> tuple[int, int]:
        async with self.db() as session:
            entries = int(await session.scalar(select(func.coalesce(func.sum(FetchLog.items_seen), 0))) or 0)
            failures = int(await session.scalar(select(func.count()).where(FetchLog.error_class == "parse")) or 0)
        await self.engine.dispose()
        return entries, failures


async def main(archive: Path, limit: int | None, concurrency: int, chunk: int) -> dict[str, float | int]:
    snapshots = load_snapshots(archive, limit)
    baseline = pipeline_seconds = 0.0
    ratios = []
    async with scratch_database() as url:
        pipeline = Pipeline(url, concurrency)
        await pipeline.prepare({feed for feed, _, _ in snapshots})
        for start in range(0, len(snapshots), chunk):
            part = snapshots[start : start + chunk]
            bare = bare_feedparser_seconds(part)
            ours = await pipeline.replay(part)
            baseline, pipeline_seconds = baseline + bare, pipeline_seconds + ours
            ratios.append(ours / bare)
        entries, not_a_feed = await pipeline.totals()
    return {
        "snapshots": len(snapshots),
        "entries": entries,
        "new_articles": pipeline.new_articles,
        "not_a_feed": not_a_feed,
        "entries_per_second": round(entries / pipeline_seconds, 1),
        "new_articles_per_second": round(pipeline.new_articles / pipeline_seconds, 1),
        "pipeline_seconds": round(pipeline_seconds, 2),
        "feedparser_seconds": round(baseline, 2),
        "ratio_to_feedparser": round(pipeline_seconds / baseline, 3),
        "ratio_median_of_chunks": round(statistics.median(ratios), 3),
        "concurrency": concurrency,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", type=Path, default=DEFAULT_ARCHIVE)
    parser.add_argument("--limit", type=int, help="only the first N snapshots")
    parser.add_argument("--concurrency", type=int, default=Settings().worker_max_jobs,
                        help="documents in flight at once (default: a worker's max_jobs)")  # fmt: skip
    parser.add_argument("--chunk", type=int, default=200, help="snapshots per alternation with the baseline")
    args = parser.parse_args()
    if not args.archive.exists():
        raise SystemExit(f"no snapshot archive at {args.archive} (pass --archive)")
    print(json.dumps(asyncio.run(main(args.archive, args.limit, args.concurrency, args.chunk))))
