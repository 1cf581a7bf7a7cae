"""Story clustering at ingest speed, with a full window live, and near-duplicate lookup at 1M fingerprints.

Clustering: a scratch database (the real migrations) holds `--live` articles (default 200k) spread over the last
48 hours, already clustered into stories. They are made from the real feed items in `../shared/data/feeds` (or
`$NEWSAGG_SHARED_DATA/feeds`, or the file `$NEWSAGG_FEED_ITEMS`): each item seeds a story, and the story's other
articles are rewordings of it (words dropped and reordered, summary words added) from other outlets, so the
vocabulary, its skew and the story sizes look like a live window. The warm state is built by the clusterer on a
worker's in-memory state and saved the way a worker saves it. Then `--new` articles (half join live stories, half
start new ones, all from items not used for the window) are clustered by `app.stories.service.cluster_articles` in
batches of `--batch`, exactly as the worker does, by a worker whose copy starts cold (its first batch is timed
apart). The baseline in the same run is the same clusterer on a copy of the in-memory state (`ratio_pg_to_memory`).

Lookup: bench/near_duplicates.py over `--fingerprints` (default 1M): LSH band keys on a GIN index against the
design documents' `bit_count` scan over the same fingerprints.

    python -m bench.cluster [--live 200000] [--new 4000] [--batch 50] [--fingerprints 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gzip
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from app.articles import repository as articles
from app.articles.fingerprints import content_hash
from app.db import migrate
from app.entities.extractor import extract
from app.sources.models import Source
from app.stories import service
from app.stories.clustering import IncomingArticle, StoryClusterer, StoryState
from app.stories.store import ClusteringCache
from bench import near_duplicates
from bench.ingest import scratch_database

SHARED = Path(os.environ.get("NEWSAGG_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEFAULT_ITEMS = SHARED / "feeds" / "gesab001_headlines_items.jsonl.gz"
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
WINDOW = timedelta(hours=48)
SOURCES = 2000


@dataclass(frozen=True, slots=True)
class Synthetic:
    title: str
    summary: str
    source: int
    at: datetime


def read_items(path: Path) -> list[tuple[str, str]]:
    seen: set[str] = set()
    items = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            title = (item.get("title") or "").strip()
            if len(title.split()) >= 4 and title.lower() not in seen:
                seen.add(title.lower())
                items.append((title, (item.get("summary") or "")[:300]))
    return items


def reword(rng: random.Random, title: str, summary: str) -> tuple[str, str]:
    """Another outlet's headline for the same story: most of the words, some reordered, some from the summary."""
    words = title.split()
    kept = [w for w in words if rng.random() < 0.75] or words[:3]
    if len(kept) > 3 and rng.random() < 0.5:
        i = rng.randrange(len(kept) - 1)
        kept[i], kept[i + 1] = kept[i + 1], kept[i]
    extra = [w for w in summary.split() if w[:1].isupper()][:2] if rng.random() < 0.5 else []
    return " ".join(kept + extra), summary if rng.random() < 0.5 else ""


def story_size(rng: random.Random) -> int:
    """Heavy-tailed: most stories have one or two articles, a few have hundreds."""
    return min(int(rng.paretovariate(1.4)), 400)


def synthesize(rng: random.Random, seeds: list[tuple[str, str]], count: int, start: datetime, span: timedelta,
               ) -> list[Synthetic]:  # fmt: skip
    out: list[Synthetic] = []
    for title, summary in seeds:
        if len(out) >= count:
            break
        began = start + span * rng.random()
        for n in range(story_size(rng)):
            at = min(began + timedelta(minutes=rng.expovariate(1 / 90)) if n else began, start + span)
            headline, text_ = (title, summary) if n == 0 else reword(rng, title, summary)
            out.append(Synthetic(headline, text_, rng.randrange(1, SOURCES + 1), at))
    out.sort(key=lambda a: a.at)
    return out[:count]


async def load_window(connection: AsyncConnection, window: list[Synthetic]) -> StoryState:
    """Insert the window's articles, cluster them in memory and save that state, as ingest would have left it."""
    await connection.execute(insert(Source), [
        {"id": i, "feed_url": f"https://outlet{i}.example/feed", "name": f"Outlet {i}", "min_interval_s": 300,
         "max_interval_s": 86400, "authority": random.Random(i).random()} for i in range(1, SOURCES + 1)])  # fmt: skip
    ids = await insert_articles(connection, window, "w")
    cache = ClusteringCache()
    StoryClusterer(service.INGEST_POLICY).assign_all(cache.state, [
        IncomingArticle(i, a.title, a.summary, str(a.source), a.at, random.Random(a.source).random())
        for i, a in zip(ids, window, strict=True)])  # fmt: skip
    await cache.save(connection, datetime.now(UTC))
    await connection.execute(text("SELECT setval('story_clusters_id_seq', (SELECT max(id) FROM story_clusters))"))
    # each article arrived when it was published (velocity looks at the last 30 minutes of arrivals)
    await connection.execute(text("UPDATE articles SET crawled_at = published_at"))
    return cache.state


async def insert_articles(connection: AsyncConnection, batch: list[Synthetic], tag: str) -> list[int]:
    rows = [articles.NewArticle(a.source, f"{tag}{i}", f"https://outlet{a.source}.example/{tag}{i}", a.title,
                                a.summary, None, a.at, content_hash(a.title, a.summary))
            for i, a in enumerate(batch)]  # fmt: skip
    ids: list[int] = []
    for start in range(0, len(rows), 10_000):
        ids += [a.id for a in sorted(await articles.insert_new(connection, rows[start : start + 10_000]),
                                     key=lambda a: a.id)]  # fmt: skip
    return ids


async def clustering(items: list[tuple[str, str]], live: int, new: int, batch: int) -> dict[str, object]:
    rng = random.Random(7)
    rng.shuffle(items)
    held_out, seeds = items[: new // 2], items[new // 2 :]
    window = synthesize(rng, seeds, live, NOW - WINDOW, WINDOW - timedelta(minutes=30))
    used = {a.title for a in window}
    joining = [a for a in window if a.at > NOW - timedelta(hours=6)]
    incoming = [Synthetic(*reword(rng, a.title, a.summary), rng.randrange(1, SOURCES + 1), NOW)
                for a in rng.sample(joining, min(new // 2, len(joining)))]  # fmt: skip
    incoming += [Synthetic(t, s, rng.randrange(1, SOURCES + 1), NOW) for t, s in held_out if t not in used]
    rng.shuffle(incoming)
    async with scratch_database() as url:
        engine = create_async_engine(url)
        await migrate.upgrade(engine)
        async with engine.begin() as connection:
            started = time.perf_counter()
            state = await load_window(connection, window)
            print(f"window: {len(window)} articles, {len(state.stories)} live stories, "
                  f"loaded in {time.perf_counter() - started:.0f} s", file=sys.stderr)  # fmt: skip
            await connection.execute(text("ANALYZE"))
        async with engine.begin() as connection:
            new_ids = await insert_articles(connection, incoming, "n")

        memory = copy.deepcopy(state)
        # The worker that clusters an article has just understood it, and the entity extractor's cache holds it
        # (app/entities/extractor.py): both timed runs below find the 4,000 articles there, as understanding left them.
        for a in incoming:
            extract(a.title, a.summary)
        started = time.perf_counter()
        StoryClusterer(service.INGEST_POLICY).assign_all(memory, [
            IncomingArticle(i, a.title, a.summary, str(a.source), a.at) for i, a in zip(new_ids, incoming, strict=True)
        ])  # fmt: skip
        memory_seconds = time.perf_counter() - started

        cache = ClusteringCache()  # a worker that starts now: its first batch loads the window
        started = time.perf_counter()
        await service.cluster_articles(engine, new_ids[:batch], cache)
        warm_up_seconds = time.perf_counter() - started
        started = time.perf_counter()
        for start in range(batch, len(new_ids), batch):
            await service.cluster_articles(engine, new_ids[start : start + batch], cache)
        pg_seconds = time.perf_counter() - started
        async with engine.connect() as connection:
            unclustered = await connection.scalar(
                text("SELECT count(*) FROM articles WHERE cluster_id IS NULL AND id = ANY(:ids)"), {"ids": new_ids}
            )
        await engine.dispose()
    assert unclustered == 0, f"{unclustered} articles left without a story"
    return {
        "live_articles": len(window),
        "live_stories": len(state.stories),
        "new_articles": len(new_ids),
        "batch": batch,
        "pg_articles_per_second": round((len(new_ids) - batch) / pg_seconds, 1),
        "worker_warm_up_seconds": round(warm_up_seconds, 2),
        "memory_articles_per_second": round(len(new_ids) / memory_seconds, 1),
        "ratio_pg_to_memory": round(memory_seconds / len(new_ids) / (pg_seconds / (len(new_ids) - batch)), 3),
    }


async def main(args: argparse.Namespace) -> dict[str, object]:
    items_path = Path(os.environ.get("NEWSAGG_FEED_ITEMS", DEFAULT_ITEMS))
    result: dict[str, object] = {"clustering": await clustering(read_items(items_path), args.live, args.new,
                                                                 args.batch)}  # fmt: skip
    if args.fingerprints:
        result["lookup"] = await near_duplicates.main(args.fingerprints, args.queries)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--live", type=int, default=200_000)
    parser.add_argument("--new", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--fingerprints", type=int, default=1_000_000, help="0 skips the lookup part")
    parser.add_argument("--queries", type=int, default=300)
    arguments = parser.parse_args()
    if not Path(os.environ.get("NEWSAGG_FEED_ITEMS", DEFAULT_ITEMS)).exists():
        raise SystemExit("feed items not found (../shared/data/feeds; set NEWSAGG_SHARED_DATA or NEWSAGG_FEED_ITEMS)")
    print(json.dumps(asyncio.run(main(arguments))))
