"""A region's feed against the global one on the real feed snapshots: the snapshots replayed through ingest,
understanding and clustering (bench/replay_stories.py), each outlet placed by its feed's own link, then the feed
ranked at the replay's last moment for everyone and for each region asked.

    python -m bench.region_feed [--archive PATH] [--limit N] [--regions NZ,PH,GB,AU]

The last line is one JSON object: the outlets' countries, and per region the top stories of its feed next to the
global top, how many of the top 10 differ, and how long ranking a region's feed takes relative to the global one
(ratio, same run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import text

from app.feed.service import FeedScope, build
from app.services import Services
from bench.ingest import DEFAULT_ARCHIVE, Pipeline, load_snapshots, scratch_database
from bench.replay_stories import pipeline_settings, replay

TOP = 10


async def _titles(services: Services, scope: FeedScope, now: Any) -> tuple[list[dict[str, Any]], float]:
    started = time.perf_counter()
    ranked = await build(services, scope, now)
    seconds = time.perf_counter() - started
    ids = [item.story_id for item in ranked.items[:TOP]]
    async with services.engine.connect() as connection:
        rows = {r.id: r for r in await connection.execute(text(
            "SELECT id, title, source_count FROM story_clusters WHERE id = ANY(:ids)"), {"ids": ids})}  # fmt: skip
    top = [{"title": rows[i].title, "sources": rows[i].source_count, "locality": item.signals.locality}
           for i, item in zip(ids, ranked.items, strict=False)]  # fmt: skip
    return top, seconds


async def main(archive: Path, limit: int | None, chunk: int, regions: list[str]) -> dict[str, Any]:
    snapshots = load_snapshots(archive, limit)
    async with scratch_database() as url:
        pipeline = Pipeline(url, concurrency=4)
        await pipeline.prepare({feed for feed, _, _ in snapshots})
        await replay(pipeline, snapshots, chunk)
        await pipeline.engine.dispose()
        services = Services.open(pipeline_settings(url))
        try:
            async with services.engine.connect() as connection:
                now = await connection.scalar(text("SELECT max(last_updated_at) FROM story_clusters"))
                outlets = {r.name: [r.country, r.outlet_kind] for r in await connection.execute(text(
                    "SELECT name, country, outlet_kind FROM sources ORDER BY name"))}  # fmt: skip
                places = await connection.scalar(text("SELECT count(*) FROM article_places"))
            await _titles(services, FeedScope(None), now)  # warm: the first ranking of a process pays its imports
            everyone, global_s = await _titles(services, FeedScope(None), now)
            out: dict[str, Any] = {"snapshots": len(snapshots), "ranked_at": now.isoformat(), "outlets": outlets,
                                   "article_places": places, "global_top": [s["title"] for s in everyone]}  # fmt: skip
            for region in regions:
                local, region_s = await _titles(services, FeedScope(None, region=region), now)
                out[region] = {
                    "top": local,
                    "differs_from_global_in_top_10": len({s["title"] for s in local} - set(out["global_top"])),
                    "rank_seconds_ratio_to_global": round(region_s / global_s, 2) if global_s else None,
                }
            return out
        finally:
            await services.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", type=Path, default=DEFAULT_ARCHIVE)
    parser.add_argument("--limit", type=int, default=1500, help="the first N snapshots")
    parser.add_argument("--chunk", type=int, default=200, help="snapshots ingested between two clustering rounds")
    parser.add_argument("--regions", default="NZ,PH,GB,AU")
    args = parser.parse_args()
    if not args.archive.exists():
        raise SystemExit(f"no snapshot archive at {args.archive} (pass --archive)")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/7")
    print(json.dumps(asyncio.run(main(args.archive, args.limit, args.chunk, args.regions.split(","))),
                     ensure_ascii=False))  # fmt: skip
