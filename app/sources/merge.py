"""Two sources that prove to be one feed (their feed URLs equal once normalized again, migration 0020/0022, or an
administrator's `newsagg sources merge`) become one: the survivor keeps its settings and takes the other's articles,
fetch log and archive, readers' follows and mutes, and the earlier of the two next crawls; the other is deleted.

An article both hold (the same external id) is merged like two copies of one URL (app/articles/merging.py): the
survivor's is kept. Stories that hold the other's articles are counted again (their sources are one fewer) and their
recent arrivals are the survivor's. In the caller's transaction, holding the clustering lock until it ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.articles import repository as articles
from app.articles.merging import merge_planned
from app.db.engine import Executor
from app.sources import repository as sources
from app.stories.repair import lock_clustering, repair_stories

# What references a source, and how a merge carries it (tests/test_source_merge.py checks that this covers every
# foreign key to sources)
REFERENCES = ("articles.source_id", "crawl_schedule.source_id", "fetch_archive.source_id", "fetch_log.source_id",
              "source_follows.source_id", "source_mutes.source_id")  # fmt: skip


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
    found = await sources.lock_sources(db, [survivor, other])
    if missing := sorted({survivor, other} - found):
        raise SourcesNotMerged(f"no source {', '.join(map(str, missing))}")
    await lock_clustering(db)
    await articles.open_merge_plan(db)
    await sources.plan_shared_article_merges(db, survivor, other)
    both = await merge_planned(db)
    await articles.close_merge_plan(db)
    moved = await sources.move_articles(db, survivor, other)
    stories = sorted({story for story in moved if story is not None} | both.stories)
    await sources.hand_over_arrivals(db, survivor, other, stories)
    await repair_stories(db, stories, [])
    await sources.hand_over_and_delete(db, survivor, other)
    return Merged(survivor, other, len(moved), both.articles, len(stories))


async def feed_url_normalized(db: Executor, source_id: int, url: str) -> tuple[int, int] | None:
    """A source's feed URL set to its normal form `url`; when another source has it, the two are merged first (the
    older survives, with `url`): (survivor, merged), else None."""
    holder = await sources.holder_of_feed_url(db, url)
    pair = None
    if holder is not None and holder != source_id:
        pair = (min(holder, source_id), max(holder, source_id))
        await merge_sources(db, *pair)
    if pair is None or pair[0] == source_id:
        await sources.set_feed_url(db, source_id, url)
    return pair
