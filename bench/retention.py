"""Retention at a million articles: the hourly pass deleting the oldest `--delete` articles, and ingest meanwhile.

A scratch database (the real migrations) is loaded as `bench.search` loads it (its loader: the real feed items and
generated ones, 300 sources over 60 days, 40% of the articles in stories), `--articles` in all (default 1,000,000).
The real items, which span a year and a half, are spread evenly over those 60 days, in their order: an article is
stored when it is crawled, so a database of a few weeks' news holds its old items as stored lately too, and the
oldest stored articles are a mix of stories' and lone ones, as in production.
Article retention is then set so that exactly the `--delete` oldest stored articles (default 100,000) are due, and
one retention pass (`app.retention.service.prune`, as the worker's hourly job runs it) deletes them, a batch of
`NEWSAGG_RETENTION_ARTICLE_BATCH` per transaction, repairing their stories.

Ingest is one writer storing 100 new articles per transaction (ingest's statement) and clustering them into stories
(`cluster_articles` with a worker's cache: it takes the clustering lock each retention batch holds), as fast as it
can. Its articles/s are measured alone for `--seconds` before the pass and again after it (the baseline: their
mean), and during the pass (the ratio to the baseline); also its longest round alone and during (how long ingest
waited at worst). After the pass, the stories are checked against their articles (counts and representatives), and
the next hour's pass deletes the stories this one emptied.

    python -m bench.retention [--articles 1000000] [--delete 100000] [--seconds 20] [--data PATH] [--seed 7]

Progress goes to stderr; the last line of stdout is one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles import repository as articles
from app.articles.fingerprints import content_hash
from app.db import migrate
from app.db.engine import create_engine
from app.retention.service import RetentionPass, prune
from app.settings import Settings
from app.stories.service import cluster_articles
from app.stories.store import ClusteringCache
from bench.figures import quantile
from bench.ingest import scratch_database
from bench.search import DAYS, DEFAULT_DATA, ITEMS, Corpus, Item, load, plan_corpus, read_items, say

ROUND = 100  # articles stored (and clustered) per ingest transaction


def spread(items: list[Item]) -> list[Item]:
    """The items, in their order, published evenly over the last DAYS days before the newest."""
    ordered = sorted(items, key=lambda item: item.published)
    newest, step = ordered[-1].published, DAYS * 86400 / len(ordered)
    return [replace(item, published=newest - (len(ordered) - 1 - n) * step) for n, item in enumerate(ordered)]


_NTH_OLDEST = text("SELECT crawled_at FROM articles ORDER BY crawled_at OFFSET :n LIMIT 1")
_INCONSISTENT = text("""
    SELECT count(*) FROM story_clusters AS s
    LEFT JOIN LATERAL (SELECT count(*) AS n FROM articles AS a WHERE a.cluster_id = s.id) AS actual ON true
    WHERE s.merged_into_id IS NULL AND (s.article_count <> actual.n
        OR (actual.n > 0) <> (s.representative_article_id IS NOT NULL)
        OR s.representative_article_id IS NOT NULL AND NOT EXISTS (
            SELECT FROM articles AS r WHERE r.id = s.representative_article_id AND r.cluster_id = s.id))
""")


@dataclass
class Ingest:
    """One writer storing and clustering articles; what it did in each measured stretch."""

    engine: AsyncEngine
    source_ids: list[int]
    corpus: Corpus
    rng: random.Random
    cache: ClusteringCache = field(default_factory=ClusteringCache)
    serial: itertools.count[int] = field(default_factory=itertools.count)

    def new_article(self) -> articles.NewArticle:
        n = next(self.serial)
        title = " ".join(self.corpus.title_chain.make(self.rng, 6, 14)).capitalize()
        summary = " ".join(self.corpus.summary_chain.make(self.rng, 12, 40))
        return articles.NewArticle(source_id=self.rng.choice(self.source_ids), external_id=f"ingest-{n}",
                                   url=f"https://bench.example/ingest/{n}", title=title, summary=summary,
                                   author=None, published_at=datetime.now(UTC),
                                   content_hash=content_hash(title, summary))  # fmt: skip

    async def round(self) -> float:
        """Stores and clusters ROUND articles; how long it took."""
        started = time.perf_counter()
        async with self.engine.begin() as connection:
            stored = await articles.insert_new(connection, [self.new_article() for _ in range(ROUND)])
        await cluster_articles(self.engine, [a.id for a in stored], self.cache)
        return time.perf_counter() - started

    async def run(self, until: asyncio.Event | float) -> dict[str, float]:
        """Rounds until `until` is set (or for that many seconds): articles/s and the longest round."""
        started, rounds = time.perf_counter(), []
        while not (until.is_set() if isinstance(until, asyncio.Event) else time.perf_counter() - started >= until):
            rounds.append(await self.round())
        elapsed = time.perf_counter() - started
        return {"articles_per_s": round(len(rounds) * ROUND / elapsed, 1),
                "longest_round_s": round(max(rounds, default=0.0), 3), "rounds": len(rounds)}  # fmt: skip


async def retention_settings(engine: AsyncEngine, settings: Settings, delete: int, now: datetime) -> Settings:
    """`settings` with article retention set so that the `delete` oldest stored articles are due at `now`."""
    async with engine.connect() as connection:
        first_kept = await connection.scalar(_NTH_OLDEST, {"n": delete})
    days = (now - first_kept).total_seconds() / 86400 if first_kept else 0
    return settings.model_copy(update={"articles_retention_days": days})


async def during_the_pass(ingest: Ingest, engine: AsyncEngine, settings: Settings,
                          now: datetime) -> tuple[RetentionPass, float, dict[str, float]]:  # fmt: skip
    """The retention pass, and ingest running beside it until it ends."""
    done = asyncio.Event()

    async def pass_() -> tuple[RetentionPass, float]:
        started = time.perf_counter()
        try:
            return await prune(engine, settings, now), time.perf_counter() - started
        finally:
            done.set()

    (result, seconds), during = await asyncio.gather(pass_(), ingest.run(done))
    return result, seconds, during


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    corpus = plan_corpus(spread(read_items(args.data / ITEMS)), args.articles, rng)
    async with scratch_database() as url:
        engine = create_engine(Settings(_env_file=None, database_url=url))  # type: ignore[call-arg]
        try:
            await migrate.upgrade(engine)
            loaded = await load(url, corpus, args.seed)
            say(f"loaded {args.articles:,} articles in {loaded['load_seconds']} s, indexes in "
                f"{loaded['index_build_seconds']} s")  # fmt: skip
            async with engine.connect() as connection:
                source_ids = list(await connection.scalars(text("SELECT id FROM sources ORDER BY id")))
            ingest = Ingest(engine, source_ids, corpus, rng)
            for _ in range(3):
                await ingest.round()  # warm-up: the worker's cache catches up with the last 48 hours' stories
            say(f"ingest alone for {args.seconds} s")
            before = await ingest.run(args.seconds)
            now = datetime.now(UTC)
            settings = await retention_settings(engine, Settings(_env_file=None, database_url=url), args.delete, now)  # type: ignore[call-arg]
            say(f"retention: articles stored more than {settings.articles_retention_days:.2f} days ago, with ingest")
            result, seconds, during = await during_the_pass(ingest, engine, settings, now)
            say(f"deleted {result.deleted['articles']:,} articles in {seconds:.1f} s; ingest alone again")
            after = await ingest.run(args.seconds)
            stories_only = settings.model_copy(update={"articles_retention_days": 0})
            next_pass = await prune(engine, stories_only, now + timedelta(hours=1))
            result.deleted["stories"] += next_pass.deleted["stories"]
            async with engine.connect() as connection:
                inconsistent = await connection.scalar(_INCONSISTENT)
        finally:
            await engine.dispose()
    return figures(args, loaded, result, seconds, before, during, after, inconsistent)


def figures(args: argparse.Namespace, loaded: dict[str, Any], result: RetentionPass, seconds: float,
            before: dict[str, float], during: dict[str, float], after: dict[str, float],
            inconsistent: int) -> dict[str, Any]:  # fmt: skip
    alone = (before["articles_per_s"] + after["articles_per_s"]) / 2
    article_batches = result.batch_seconds.get("articles") or [0.0]
    return {
        "articles": args.articles,
        "load_seconds": loaded["load_seconds"],
        "index_build_seconds": loaded["index_build_seconds"],
        "articles_deleted": result.deleted["articles"],
        "deletion_seconds": round(seconds, 1),
        "deleted_per_s": round(result.deleted["articles"] / seconds, 1) if seconds else None,
        "batches": result.batches,
        "longest_batch_s": round(result.longest_batch_s, 3),
        "article_batch_p50_s": round(quantile(article_batches, 0.5), 3),
        "article_batch_p99_s": round(quantile(article_batches, 0.99), 3),
        "longest_batch_s_by_kind": {kind: round(max(s), 3) for kind, s in result.batch_seconds.items()},
        "stories_repaired": len(result.stories_repaired),
        "stories_emptied": result.stories_emptied,
        "stories_deleted_next_pass": result.deleted["stories"],
        "inconsistent_stories": inconsistent,
        "ingest_alone_per_s": round(alone, 1),
        "ingest_alone_before_per_s": before["articles_per_s"],
        "ingest_alone_after_per_s": after["articles_per_s"],
        "ingest_during_per_s": during["articles_per_s"],
        "ingest_ratio_during_to_alone": round(during["articles_per_s"] / alone, 3) if alone else None,
        "ingest_longest_round_alone_s": max(before["longest_round_s"], after["longest_round_s"]),
        "ingest_longest_round_during_s": during["longest_round_s"],
        "ingest_round_articles": ROUND,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=1_000_000, help="articles loaded (default 1,000,000)")
    parser.add_argument("--delete", type=int, default=100_000, help="oldest articles the pass deletes")
    parser.add_argument("--seconds", type=float, default=20, help="ingest measured alone this long, before and after")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"the folder holding {ITEMS}")
    parser.add_argument("--seed", type=int, default=7)
    arguments = parser.parse_args()
    if not (arguments.data / ITEMS).exists():
        raise SystemExit(f"no feed items at {arguments.data / ITEMS} (pass --data: the shared data's feeds folder)")
    print(json.dumps(asyncio.run(main(arguments))))
