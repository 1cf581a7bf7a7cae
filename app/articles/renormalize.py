"""Stored article URLs normalized again after the rules changed (migration 0020); articles whose URLs become one are
merged into the oldest, which takes over their engagement, story, entities and copies, and the others are deleted.
Sources' feed URLs are normalized again too; two sources whose feed URLs become one are merged into the older
(app/sources/merge.py: articles, fetch log, archive, follows and mutes move to it; it keeps its own settings).

Idempotent: a second run finds every URL already in normal form and changes nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from sqlalchemy import text

from app.articles.merging import REFERENCES, merge_planned
from app.articles.repository import PLAN_TABLE
from app.db.engine import Executor
from app.ingest.urls import normalized_or_none
from app.sources.merge import feed_url_normalized
from app.stories.repair import lock_clustering

BATCH = 10_000
__all__ = ["REFERENCES", "Renormalized", "renormalize_article_urls"]
_TABLES = [
    text("CREATE TEMP TABLE url_changes (id bigint PRIMARY KEY, url text NOT NULL)"),
    PLAN_TABLE,  # the merges planned, as app/articles/merging.py carries them out
]
_DROP_TABLES = text("DROP TABLE url_changes, url_merges")
_STORED = text("SELECT id, url FROM articles WHERE url IS NOT NULL AND id > :after ORDER BY id LIMIT :batch")
_ADD_CHANGES = text("INSERT INTO url_changes SELECT * FROM unnest(CAST(:ids AS bigint[]), CAST(:urls AS text[]))")
# Every article that will hold a URL (rewritten, or already so): more than one is a merge into the first stored
_PLAN_MERGES = text("""
    INSERT INTO url_merges (copy, keeper)
    SELECT unnest(ids[2:]), ids[1] FROM (
        SELECT array_agg(a.id ORDER BY a.crawled_at, a.id) AS ids
        FROM (SELECT id, url FROM url_changes UNION SELECT a.id, a.url FROM articles a JOIN url_changes c USING (url))
             AS holder JOIN articles a USING (id)
        GROUP BY holder.url HAVING count(*) > 1
    ) AS same_url
""")
# An article known by its URL (a feed without usable GUIDs) keeps being known by it
_SOURCES = text("SELECT id, feed_url FROM sources ORDER BY id")
_REWRITE = text("""
    UPDATE articles a SET url = c.url, external_id = CASE
        WHEN a.external_id = a.url AND NOT EXISTS (
            SELECT FROM articles o WHERE o.source_id = a.source_id AND o.external_id = c.url) THEN c.url
        ELSE a.external_id END
    FROM url_changes c WHERE a.id = c.id
""")


@dataclass(frozen=True, slots=True)
class Renormalized:
    rewritten: int  # articles whose URL changed and that were kept
    merged: int  # articles merged into an older one with the same URL, then deleted
    stories: int  # stories that lost a merged article and were counted again
    sources: int = 0  # sources whose feed URL changed
    sources_merged: tuple[tuple[int, int], ...] = ()  # (survivor, merged) of sources whose feed URLs became one


async def renormalize_article_urls(db: Executor) -> Renormalized:
    """In the caller's transaction, holding the clustering lock until it ends."""
    await lock_clustering(db)
    for table in _TABLES:
        await db.execute(table)
    async for batch in _stored_urls(db):  # a URL the rules now refuse (None) stays as it is
        changes = [(id_, new) for id_, url in batch if (new := normalized_or_none(url)) not in (url, None)]
        if changes:
            await db.execute(_ADD_CHANGES, {"ids": [c[0] for c in changes], "urls": [c[1] for c in changes]})
    await db.execute(_PLAN_MERGES)
    deleted = await merge_planned(db)
    rewritten = await db.execute(_REWRITE)
    await db.execute(_DROP_TABLES)
    sources, merged = await renormalize_feed_urls(db)
    return Renormalized(int(getattr(rewritten, "rowcount", 0) or 0), deleted.articles, len(deleted.stories),
                        sources, merged)  # fmt: skip


async def renormalize_feed_urls(db: Executor) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Sources' feed URLs in normal form, those that become one merged: (sources rewritten, (survivor, merged)...).
    Idempotent; a source merged away before its own turn is skipped."""
    rewritten, merged = 0, list[tuple[int, int]]()
    for source in list(await db.execute(_SOURCES)):
        url = normalized_or_none(source.feed_url)
        if url in (source.feed_url, None) or source.id in {m for _, m in merged}:
            continue
        if (pair := await feed_url_normalized(db, source.id, url)) is None:
            rewritten += 1
        else:
            merged.append(pair)
    return rewritten, tuple(merged)


async def _stored_urls(db: Executor) -> AsyncIterator[list[tuple[int, str]]]:
    after = 0
    while rows := [(row.id, row.url) for row in await db.execute(_STORED, {"after": after, "batch": BATCH})]:
        yield rows
        after = rows[-1][0]
