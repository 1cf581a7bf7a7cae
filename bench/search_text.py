"""What searching articles' own text costs PostgreSQL search: latency with bodies indexed against title/summary only,
on the same articles and queries in one run.

bench/search.py's corpus (`--articles`, default 100,000: the real feed items and generated ones) is loaded into a
scratch database and searched with its query mix (~400 queries, each without and with filters) as title and summary
only; then every article gets a text (`article_texts`, as extraction stores it: the summaries of the next
`--body-summaries` articles, about 3 KB of real news sentences, the median article body; one in 50 a 30 KB page, over
the 20,000-character cap), which the body index of migration 0027 takes in as texts arrive; then VACUUM
ANALYZE as autovacuum would, and the same searches again. Figures: p50/p95 of both rounds and their ratios, hits
found, the rate texts are indexed at (what the migration's backfill and the page-fetch path pay per text), the
articles table's size (with its indexes) before and after, the body index's (on article_texts), and what search
stores after (the table and the body index) against before.

    python -m bench.search_text [--articles 100000] [--body-summaries 15] [--data PATH] [--seed 7] [--keep]

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db import migrate
from app.db.engine import create_engine, session_factory
from app.search.recent import keep_recent_index
from app.search.service import Search
from app.settings import Settings
from bench.ingest import scratch_database
from bench.search import (
    DEFAULT_DATA,
    ITEMS,
    REDIS_URL,
    Spec,
    deliver_loader_events,
    load,
    percentiles,
    plan_corpus,
    query_mix,
    read_items,
    say,
    search_rounds,
    specs,
)

TEXT_BATCH = 2000  # articles given a text per statement
LONG_EVERY = 50  # one article in this many has a long page (over the cap)

# real sentences: the summaries of the next articles by id, as one body; a long page repeats its body to 30 KB
_TEXTS = text("""
    INSERT INTO article_texts (article_id, origin, text, html, word_count)
    SELECT a.id, 'page', CASE WHEN a.id % :long_every = 0 THEN left(repeat(b.body || ' ', 40), 30000) ELSE b.body END,
           '', 500
    FROM articles a CROSS JOIN LATERAL (
        SELECT string_agg(n.summary, ' ' ORDER BY n.id) AS body FROM articles n
        WHERE n.id > a.id AND n.id <= a.id + :summaries AND n.summary <> ''
    ) AS b
    WHERE a.id > :after AND a.id <= :after + :batch AND b.body IS NOT NULL
""")
_TEXT_SIZES = text("""
    SELECT avg(length(text))::int AS chars, percentile_cont(0.5) WITHIN GROUP (ORDER BY length(text)) AS median
    FROM article_texts""")
_SIZE = text("SELECT pg_total_relation_size('articles')")
# what search keeps of the bodies: their index (migration 0027; the texts themselves are stored for the reader anyway)
_BODY_INDEX = text("SELECT pg_relation_size('ix_article_texts_body')")


async def measured(search: Search, sessions: Any, plan: list[Spec], max_id: int, seed: int) -> dict[str, Any]:
    """One unmeasured pass, then the measured one: latencies and first-page hits."""
    await search_rounds(search, sessions, plan, max_id, random.Random(seed))
    timed, _, rejected = await search_rounds(search, sessions, plan, max_id, random.Random(seed))
    firsts = [t for t in timed if not t.offset]
    return {**percentiles([t.ms for t in timed]), "rejected": rejected, "hits": sum(t.hits for t in firsts),
            "empty_first_pages": sum(not t.hits for t in firsts)}  # fmt: skip


async def add_texts(engine: AsyncEngine, max_id: int, summaries: int) -> dict[str, Any]:
    """A text for every article (as extraction stores them; the triggers index them), then VACUUM ANALYZE."""
    started, texts = time.perf_counter(), 0
    for after in range(0, max_id, TEXT_BATCH):
        async with engine.begin() as connection:
            texts += (await connection.execute(_TEXTS, {"after": after, "batch": TEXT_BATCH, "summaries": summaries,
                                                        "long_every": LONG_EVERY})).rowcount  # fmt: skip
    indexing = time.perf_counter() - started
    async with engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text("VACUUM ANALYZE articles"))
        await connection.execute(text("VACUUM ANALYZE article_texts"))
        row = (await connection.execute(_TEXT_SIZES)).one()
    return {"texts": texts, "texts_indexed_per_second": round(texts / indexing), "text_chars_mean": row.chars,
            "text_chars_median": int(row.median)}  # fmt: skip


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    items = read_items(args.data / ITEMS)
    corpus = plan_corpus(items, args.articles, rng)
    queries = query_mix(corpus.items, rng)
    redis = Redis.from_url(REDIS_URL)
    async with scratch_database(keep=args.keep) as url:
        engine = create_async_engine(url)
        await migrate.upgrade(engine)
        await engine.dispose()
        loaded = await load(url, corpus, args.seed)
        say(f"{len(corpus.plan):,} articles loaded in {loaded['load_seconds']} s")
        settings = Settings(_env_file=None, database_url=url, meili_url=None)  # type: ignore[call-arg]
        engine = create_engine(settings)
        try:
            await keep_recent_index(engine, datetime.now(UTC))
            await deliver_loader_events(engine, settings)
            sessions = session_factory(engine)
            search = Search(settings, sessions, redis)
            async with engine.connect() as connection:
                source_ids = list(await connection.scalars(text("SELECT id FROM sources ORDER BY id")))
                size_before = int(await connection.scalar(_SIZE) or 0)
            plan = specs(queries, source_ids, rng)
            say(f"title and summary only: {len(plan)} searches")
            without = await measured(search, sessions, plan, loaded["max_id"], args.seed)
            say(f"p50 {without['p50']} ms, p95 {without['p95']} ms; adding texts")
            texts = await add_texts(engine, loaded["max_id"], args.body_summaries)
            say(f"{texts['texts']:,} texts at {texts['texts_indexed_per_second']}/s; searching with bodies")
            with_bodies = await measured(search, sessions, plan, loaded["max_id"], args.seed)
            async with engine.connect() as connection:
                size_after = int(await connection.scalar(_SIZE) or 0)
                body_index = int(await connection.scalar(_BODY_INDEX) or 0)
        finally:
            await engine.dispose()
            await redis.aclose()
    return {
        "articles": len(corpus.plan),
        "searches": without["n"],
        **texts,
        "title_summary_only": without,
        "with_bodies": with_bodies,
        "ratio_p50_bodies_to_title_summary": round(with_bodies["p50"] / without["p50"], 2),
        "ratio_p95_bodies_to_title_summary": round(with_bodies["p95"] / without["p95"], 2),
        "articles_table_mb_before": round(size_before / 2**20),
        "articles_table_mb_after": round(size_after / 2**20),
        "body_index_mb": round(body_index / 2**20),
        "ratio_search_storage": round((size_after + body_index) / size_before, 2),
        **({"database": url.rsplit("/", 1)[1]} if args.keep else {}),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--body-summaries", type=int, default=15, help="summaries of later articles in each body")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"the folder holding {ITEMS}")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the database (its name is printed) to inspect it")
    arguments = parser.parse_args()
    if not (arguments.data / ITEMS).exists():
        raise SystemExit(f"no feed items at {arguments.data / ITEMS} (pass --data: the shared data's feeds folder)")
    print(json.dumps(asyncio.run(main(arguments))))
