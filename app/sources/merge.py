"""Two sources that prove to be one feed (their feed URLs equal once normalized again, migration 0020/0022, or an
administrator's `newsagg sources merge`) become one: the survivor keeps its settings and takes the other's articles,
fetch log and archive, readers' follows and mutes, and the earlier of the two next crawls; the other is deleted.

An article both hold (the same external id) is merged like two copies of one URL (app/articles/merging.py): the
survivor's is kept. Stories that hold the other's articles are counted again (their sources are one fewer) and their
recent arrivals are the survivor's. In the caller's transaction, holding the clustering lock until it ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text

from app.articles.merging import DROP_PLAN, PLAN_TABLE, merge_planned
from app.db.engine import Executor
from app.stories.repair import lock_clustering, repair_stories

# What references a source, and how a merge carries it (tests/test_source_merge.py checks that this covers every
# foreign key to sources)
REFERENCES = ("articles.source_id", "crawl_schedule.source_id", "fetch_archive.source_id", "fetch_log.source_id",
              "source_follows.source_id", "source_mutes.source_id")  # fmt: skip

_SOURCES = text("SELECT id FROM sources WHERE id = ANY(CAST(:ids AS bigint[])) ORDER BY id FOR UPDATE")
_PLAN_MERGES = text("""
    INSERT INTO url_merges (copy, keeper)
    SELECT o.id, k.id FROM articles o JOIN articles k ON k.source_id = :survivor AND k.external_id = o.external_id
    WHERE o.source_id = :other
""")
_MOVE_ARTICLES = text("UPDATE articles SET source_id = :survivor WHERE source_id = :other RETURNING cluster_id")
_MOVE = [text(statement) for statement in (
    "UPDATE fetch_log SET source_id = :survivor WHERE source_id = :other",
    "UPDATE fetch_archive SET source_id = :survivor WHERE source_id = :other",
    """INSERT INTO source_follows (user_id, source_id, created_at)
       SELECT user_id, :survivor, created_at FROM source_follows WHERE source_id = :other ON CONFLICT DO NOTHING""",
    """INSERT INTO source_mutes (user_id, source_id, created_at)
       SELECT user_id, :survivor, created_at FROM source_mutes WHERE source_id = :other ON CONFLICT DO NOTHING""",
    # the survivor is crawled as soon as either was due, at the higher of their priorities
    """UPDATE crawl_schedule s SET next_crawl_at = least(s.next_crawl_at, o.next_crawl_at),
                                   priority = greatest(s.priority, o.priority)
       FROM crawl_schedule o WHERE s.source_id = :survivor AND o.source_id = :other""",
    "DELETE FROM sources WHERE id = :other",
)]  # fmt: skip
_ARRIVALS = text("""
    UPDATE story_clusters sc SET recent_arrivals = (
        SELECT coalesce(jsonb_agg(CASE WHEN e ->> 1 = CAST(:other_key AS text)
                                       THEN jsonb_build_array(e -> 0, CAST(:survivor_key AS text)) ELSE e END), '[]')
        FROM jsonb_array_elements(sc.recent_arrivals) AS e)
    WHERE sc.id = ANY(CAST(:stories AS bigint[]))
""")


class SourcesNotMerged(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Merged:
    survivor: int
    merged: int  # the source merged into the survivor, and deleted
    articles_moved: int
    articles_merged: int  # held by both: the other's merged into the survivor's
    stories: int  # stories counted again


async def merge_sources(db: Executor, survivor: int, other: int) -> Merged:
    if survivor == other:
        raise SourcesNotMerged(f"source {survivor} cannot be merged into itself")
    found = set(await db.scalars(_SOURCES, {"ids": [survivor, other]}))
    if missing := sorted({survivor, other} - found):
        raise SourcesNotMerged(f"no source {', '.join(map(str, missing))}")
    await lock_clustering(db)
    ids = {"survivor": survivor, "other": other}
    await db.execute(PLAN_TABLE)
    await db.execute(_PLAN_MERGES, ids)
    both = await merge_planned(db)
    await db.execute(DROP_PLAN)
    moved = list(await db.scalars(_MOVE_ARTICLES, ids))
    stories = sorted({story for story in moved if story is not None} | both.stories)
    await db.execute(_ARRIVALS, {"other_key": str(other), "survivor_key": str(survivor), "stories": stories})
    await repair_stories(db, stories, [])
    for statement in _MOVE:
        await db.execute(statement, ids)
    return Merged(survivor, other, len(moved), both.articles, len(stories))


_HOLDER = text("SELECT id FROM sources WHERE feed_url = :url")
_REWRITE = text("UPDATE sources SET feed_url = :url WHERE id = :id")


async def feed_url_normalized(db: Executor, source_id: int, url: str) -> tuple[int, int] | None:
    """A source's feed URL set to its normal form `url`; when another source has it, the two are merged first (the
    older survives, with `url`): (survivor, merged), else None."""
    holder = await db.scalar(_HOLDER, {"url": url})
    pair = None
    if holder is not None and holder != source_id:
        pair = (min(holder, source_id), max(holder, source_id))
        await merge_sources(db, *pair)
    if pair is None or pair[0] == source_id:
        await db.execute(_REWRITE, {"id": source_id, "url": url})
    return pair
