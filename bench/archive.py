"""The fetch archive's storage cost, and a replay, on real feeds.

Every snapshot of the archive goes through `ingest_body` into a scratch PostgreSQL database, as in bench/ingest.py,
so each is archived by the real hook with the default settings (level 3; one body of a source in 10 stored whole, the
nine after it compressed against it); the cost is then read from PostgreSQL (`pg_total_relation_size` of
fetch_archive, its TOAST and indexes, and of fetch_articles) and given per 10,000 fetches. The baseline is the raw
bodies' size: `ratio_raw_to_stored` is how many times less the archive takes. Beside it, the ways to compress the
same bodies, measured in the same run as frame sizes against each body compressed alone at level 3: other zstd
levels, a zstd dictionary trained per source on its first 20 bodies, and what the archive does (each body
compressed against a recent body of its source, one kept whole in 10).

Then one source is replayed twice through today's parser after a tenth of its articles were deleted (as if an older
parser had missed them): the first replay's summary, and the second's, which must store nothing.

    python -m bench.archive [--archive PATH] [--limit N] [--feed rss/bbc] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections import defaultdict
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import zstandard
from sqlalchemy import text

from app.archive.replay import replay
from bench.ingest import Pipeline, load_snapshots, scratch_database

PER = 10_000
SHARED = Path(os.environ.get("NEWSAGG_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEFAULT_ARCHIVE = SHARED / "feeds" / "gesab001_headlines_all_snapshots.tar.xz"
Snapshots = list[tuple[str, str, bytes]]
_SIZES = text("""
    SELECT count(*) AS fetches, coalesce(sum(raw_bytes), 0) AS raw, coalesce(sum(octet_length(body)), 0) AS body,
           pg_total_relation_size('fetch_archive') AS archive, pg_total_relation_size('fetch_articles') AS links
    FROM fetch_archive
""")


async def _sizes(pipeline: Pipeline) -> dict[str, int]:
    async with pipeline.engine.connect() as connection:
        row = (await connection.execute(_SIZES)).one()
    return dict(row._mapping)


async def _replay_twice(pipeline: Pipeline, feed: str) -> list[dict[str, Any]]:
    source_id = pipeline.source_ids[feed]
    async with pipeline.engine.begin() as connection:
        await connection.execute(text("DELETE FROM articles WHERE source_id = :s AND id % 10 = 0"), {"s": source_id})
    since, runs = datetime.now(UTC) - timedelta(days=1), []
    for _ in range(2):
        started = time.perf_counter()
        done = await replay(pipeline.engine, pipeline.settings, source_id, since=since)
        summary = {k: v for k, v in asdict(done).items() if k not in ("changes", "failures")}
        runs.append({**summary, "seconds": round(time.perf_counter() - started, 2)})
    return runs


def _by_feed(snapshots: Snapshots) -> dict[str, list[bytes]]:
    found: dict[str, list[bytes]] = defaultdict(list)
    for feed, _, body in snapshots:  # already in time order
        found[feed].append(body)
    return found


def _alternatives(snapshots: Snapshots) -> dict[str, int]:
    """Bytes the same bodies take compressed other ways (frames only, no table overhead)."""
    bodies = [body for _, _, body in snapshots]
    found = {f"zstd_{level}": sum(len(zstandard.ZstdCompressor(level=level).compress(b)) for b in bodies)
             for level in (1, 3, 9)}  # fmt: skip
    plain = zstandard.ZstdCompressor(level=3)
    trained = referenced = 0
    for feed_bodies in _by_feed(snapshots).values():
        head, rest = feed_bodies[:20], feed_bodies[20:]
        trained += sum(len(plain.compress(b)) for b in head)
        try:
            dictionary = zstandard.train_dictionary(32 * 1024, head)
            with_dictionary = zstandard.ZstdCompressor(level=3, dict_data=dictionary)
            trained += len(dictionary.as_bytes()) + sum(len(with_dictionary.compress(b)) for b in rest)
        except zstandard.ZstdError:  # too few bodies to train on
            trained += sum(len(plain.compress(b)) for b in rest)
        against = plain
        for number, body in enumerate(feed_bodies):
            if number % 10 == 0:  # kept whole, and the reference of the next nine
                referenced += len(plain.compress(body))
                reference = zstandard.ZstdCompressionDict(body, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
                against = zstandard.ZstdCompressor(level=3, dict_data=reference)
            else:
                referenced += len(against.compress(body))
    return {**found, "zstd_3_trained_dictionary_per_source": trained, "zstd_3_against_a_recent_body": referenced}


async def main(archive: Path, limit: int | None, feed: str, keep: bool) -> dict[str, Any]:
    snapshots = load_snapshots(archive, limit)
    async with scratch_database(keep=keep) as url:
        pipeline = Pipeline(url, concurrency=4)
        await pipeline.prepare({name for name, _, _ in snapshots})
        ingest_seconds = await pipeline.replay(snapshots)
        sizes = await _sizes(pipeline)
        replays = await _replay_twice(pipeline, feed) if feed in pipeline.source_ids else []
        await pipeline.engine.dispose()
    stored = sizes["archive"] + sizes["links"]
    alternatives = _alternatives(snapshots)
    ratios = {name: round(alternatives["zstd_3"] / size, 3) for name, size in alternatives.items()}
    return {
        "fetches": sizes["fetches"],
        "raw_bytes": sizes["raw"],
        "zstd_frame_bytes": sizes["body"],
        "archive_table_bytes": sizes["archive"],
        "links_table_bytes": sizes["links"],
        "raw_mb_per_10k_fetches": round(sizes["raw"] * PER / sizes["fetches"] / 1e6, 1),
        "stored_mb_per_10k_fetches": round(stored * PER / sizes["fetches"] / 1e6, 1),
        "ratio_raw_to_stored": round(sizes["raw"] / stored, 2),
        "alternatives_ratio_to_zstd_3": ratios,
        "ingest_seconds": round(ingest_seconds, 1),
        "replay_feed": feed,
        "replays": replays,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", type=Path, default=DEFAULT_ARCHIVE)
    parser.add_argument("--limit", type=int, help="only the first N snapshots")
    parser.add_argument("--feed", default="rss/bbc", help="the feed replayed (default rss/bbc)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database (to try the CLI on it)")
    args = parser.parse_args()
    if not args.archive.exists():
        raise SystemExit(f"no snapshot archive at {args.archive} (pass --archive)")
    print(json.dumps(asyncio.run(main(args.archive, args.limit, args.feed, args.keep))))
