"""Replay the real feed snapshots through ingest, understanding and story clustering, then read the stories back
through the GraphQL API: what a reader would see after 18 months of 24 feeds.

Snapshots are ingested in time order, chunk by chunk, through `ingest_body` (as bench/ingest.py); after each chunk
the new articles are understood (fingerprint, language, topics, copies) and clustered by the worker's own
functions, with one worker cache, and the merge pass runs with the chunk's latest publication time as "now". At the
end the most widely covered stories are read through the API (`story(id)` with full coverage).

    python -m bench.replay_stories [--archive PATH] [--limit N]

The last line is one JSON object: articles, stories, how many stories have 2+/5+/10+ sources, the 10 most covered
(title, sourceCount, articleCount, outlets), and articles understood and clustered per second.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from app.api.asgi import create_app
from app.articles.understanding import understand_articles
from app.services import Services
from app.settings import Settings
from app.stories.service import cluster_articles, merge_stories
from app.stories.store import ClusteringCache
from bench.ingest import DEFAULT_ARCHIVE, Pipeline, load_snapshots, scratch_database

STORY = """query Story($id: ID!) { story(id: $id) { title sourceCount articleCount topics languages
             articles(first: 100) { source { name } } } }"""  # fmt: skip
BATCH = 500
LOCAL_REDIS = "redis://127.0.0.1:6379/15"


async def replay(pipeline: Pipeline, snapshots: list[tuple[str, str, bytes]], chunk: int) -> tuple[int, float]:
    cache = ClusteringCache()
    seconds = 0.0
    clustered = 0
    by_chunk: dict[int, list[tuple[str, str, bytes]]] = defaultdict(list)
    for index, snapshot in enumerate(snapshots):
        by_chunk[index // chunk].append(snapshot)
    for number in sorted(by_chunk):
        before = pipeline.new_articles
        await pipeline.replay(by_chunk[number])
        async with pipeline.engine.connect() as connection:
            ids = list((await connection.scalars(text(
                "SELECT id FROM articles WHERE cluster_id IS NULL ORDER BY id"))).all())  # fmt: skip
            latest = await connection.scalar(text("SELECT max(published_at) FROM articles")) or datetime.now(UTC)
        started = time.perf_counter()
        for start in range(0, len(ids), BATCH):
            batch = ids[start : start + BATCH]
            await understand_articles(pipeline.engine, batch, now=latest)
            clustered += len(await cluster_articles(pipeline.engine, batch, cache))
        await merge_stories(pipeline.engine, latest, cache)
        seconds += time.perf_counter() - started
        print(f"chunk {number + 1}/{len(by_chunk)}: {pipeline.new_articles - before} new articles", file=sys.stderr)
    return clustered, seconds


async def most_covered(url: str, count: int) -> list[dict[str, Any]]:
    settings = pipeline_settings(url)
    services = Services.open(settings)
    async with services.engine.connect() as connection:
        ids = list((await connection.scalars(text(
            "SELECT id FROM story_clusters WHERE merged_into_id IS NULL ORDER BY source_count DESC, article_count DESC "
            "LIMIT :n"), {"n": count})).all())  # fmt: skip
    out = []
    transport = httpx.ASGITransport(create_app(settings, services))
    async with httpx.AsyncClient(transport=transport, base_url="http://replay") as client:
        for story_id in ids:
            global_id = base64.b64encode(f"Story:{story_id}".encode()).decode()
            reply = await client.post("/graphql", json={"query": STORY, "variables": {"id": global_id}})
            story = reply.json()["data"]["story"]
            outlets = sorted({a["source"]["name"] for a in story.pop("articles")})
            out.append({**story, "outlets": outlets})
    await services.close()
    return out


def pipeline_settings(url: str) -> Settings:
    """The scratch database; Redis is never reached by these queries, but the API's services want an address."""
    return Settings(_env_file=None, database_url=url, redis_url=os.environ.get("REDIS_URL", LOCAL_REDIS))  # type: ignore[call-arg]


async def main(archive: Path, limit: int | None, chunk: int) -> dict[str, Any]:
    snapshots = load_snapshots(archive, limit)
    async with scratch_database() as url:
        pipeline = Pipeline(url, concurrency=8)
        await pipeline.prepare({feed for feed, _, _ in snapshots})
        clustered, seconds = await replay(pipeline, snapshots, chunk)
        async with pipeline.engine.connect() as connection:
            counts = (await connection.execute(text(
                "SELECT count(*) AS stories, count(*) FILTER (WHERE source_count >= 2) AS two, "
                "count(*) FILTER (WHERE source_count >= 5) AS five, count(*) FILTER (WHERE source_count >= 10) AS ten "
                "FROM story_clusters WHERE merged_into_id IS NULL"))).one()  # fmt: skip
        await pipeline.engine.dispose()
        top = await most_covered(url, 10)
    return {
        "snapshots": len(snapshots),
        "articles": pipeline.new_articles,
        "stories": counts.stories,
        "stories_with_2_sources": counts.two,
        "stories_with_5_sources": counts.five,
        "stories_with_10_sources": counts.ten,
        "understood_and_clustered_per_second": round(clustered / seconds, 1) if seconds else None,
        "most_covered": top,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", type=Path, default=DEFAULT_ARCHIVE)
    parser.add_argument("--limit", type=int, help="only the first N snapshots")
    parser.add_argument("--chunk", type=int, default=200, help="snapshots ingested between two clustering rounds")
    args = parser.parse_args()
    if not args.archive.exists():
        raise SystemExit(f"no snapshot archive at {args.archive} (pass --archive)")
    print(json.dumps(asyncio.run(main(args.archive, args.limit, args.chunk))))
