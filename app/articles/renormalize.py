"""Stored article URLs normalized again after the rules changed (migration 0020); articles whose URLs become one are
merged into the oldest, which takes over their engagement, story, entities and copies, and the others are deleted.
Sources' feed URLs are normalized again too, unless another source already has the new one (two sources are not
merged: each has its own settings and schedule; the pair is logged for an administrator to delete one).

Idempotent: a second run finds every URL already in normal form and changes nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from sqlalchemy import text

from app.db.engine import Executor
from app.ingest.urls import InvalidUrl, normalize_url
from app.stories.repair import delete_articles, lock_clustering

BATCH = 10_000
# What references an article, and how a merge carries it to the article kept (tests/test_renormalize.py checks that
# this covers every foreign key to articles)
REFERENCES = ("articles.duplicate_of_id", "article_entities.article_id", "article_places.article_id",
              "article_texts.article_id",
              "fetch_articles.article_id", "read_events.article_id",
              "story_clusters.representative_article_id")  # fmt: skip

_TABLES = [
    text("CREATE TEMP TABLE url_changes (id bigint PRIMARY KEY, url text NOT NULL)"),
    text("CREATE TEMP TABLE url_merges (copy bigint PRIMARY KEY, keeper bigint NOT NULL)"),
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
# places, as entities (on a database migrated past 0021: migration 0020 runs this before the table exists)
_CARRY_PLACES = text("""
    INSERT INTO article_places (article_id, key, name, country, region, mentions, seen_at)
    SELECT DISTINCT ON (m.keeper, p.key) m.keeper, p.key, p.name, p.country, p.region, p.mentions, p.seen_at
    FROM url_merges m JOIN article_places p ON p.article_id = m.copy ORDER BY m.keeper, p.key, p.seen_at
    ON CONFLICT DO NOTHING
""")
_MERGE = [text(statement) for statement in (
    # clicks and shares add up
    """UPDATE articles a SET click_count = a.click_count + s.clicks, share_count = a.share_count + s.shares
       FROM (SELECT m.keeper, sum(c.click_count) AS clicks, sum(c.share_count) AS shares
             FROM url_merges m JOIN articles c ON c.id = m.copy GROUP BY m.keeper) s
       WHERE a.id = s.keeper""",
    # an article kept outside any story joins the story of its oldest copy that had one
    """UPDATE articles a SET cluster_id = s.cluster_id
       FROM (SELECT DISTINCT ON (m.keeper) m.keeper, c.cluster_id FROM url_merges m JOIN articles c ON c.id = m.copy
             WHERE c.cluster_id IS NOT NULL ORDER BY m.keeper, c.crawled_at, c.id) s
       WHERE a.id = s.keeper AND a.cluster_id IS NULL""",
    # read events move; one reader's same action in one session on two copies was one event, and stays one
    """DELETE FROM read_events r USING (
           SELECT e.id, row_number() OVER (PARTITION BY e.user_id, coalesce(m.keeper, e.article_id), e.session_id,
                                           e.action ORDER BY m.keeper IS NOT NULL, e.at, e.id) AS place
           FROM read_events e LEFT JOIN url_merges m ON m.copy = e.article_id
           WHERE e.article_id IN (SELECT copy FROM url_merges UNION SELECT keeper FROM url_merges)) d
       WHERE r.id = d.id AND d.place > 1""",
    "UPDATE read_events r SET article_id = m.keeper FROM url_merges m WHERE r.article_id = m.copy",
    # entities the kept article does not name yet (the copies' own rows go with them)
    """INSERT INTO article_entities (article_id, key, name, kind, mentions, role, seen_at)
       SELECT DISTINCT ON (m.keeper, e.key) m.keeper, e.key, e.name, e.kind, e.mentions, e.role, e.seen_at
       FROM url_merges m JOIN article_entities e ON e.article_id = m.copy ORDER BY m.keeper, e.key, e.seen_at
       ON CONFLICT DO NOTHING""",
    # a kept article without a text (none, or a failed fetch) takes its oldest copy's, a text before a failure
    """INSERT INTO article_texts (article_id, origin, text, html, word_count, title, author, published_at, image,
                                 language, error_class, etag, last_modified, extracted_at)
       SELECT DISTINCT ON (m.keeper) m.keeper, t.origin, t.text, t.html, t.word_count, t.title, t.author,
              t.published_at, t.image, t.language, t.error_class, t.etag, t.last_modified, t.extracted_at
       FROM url_merges m JOIN article_texts t ON t.article_id = m.copy JOIN articles c ON c.id = m.copy
       ORDER BY m.keeper, t.error_class IS NOT NULL, c.crawled_at, c.id
       ON CONFLICT (article_id) DO UPDATE SET
           origin = excluded.origin, text = excluded.text, html = excluded.html, word_count = excluded.word_count,
           title = excluded.title, author = excluded.author, published_at = excluded.published_at,
           image = excluded.image, language = excluded.language, error_class = NULL, etag = excluded.etag,
           last_modified = excluded.last_modified, extracted_at = excluded.extracted_at
       WHERE article_texts.error_class IS NOT NULL AND excluded.error_class IS NULL""",
    # what a copy's fetches produced, the article kept produced
    """INSERT INTO fetch_articles (fetch_id, article_id, change)
       SELECT f.fetch_id, m.keeper, f.change FROM url_merges m JOIN fetch_articles f ON f.article_id = m.copy
       ON CONFLICT DO NOTHING""",
    # near-duplicates of a copy are near-duplicates of the article kept
    """UPDATE articles a SET duplicate_of_id = m.keeper FROM url_merges m
       WHERE a.duplicate_of_id = m.copy AND a.id <> m.keeper""",
    # a story represented by a copy: its repair (delete_articles) chooses again among the articles it still has
)]  # fmt: skip
_DELETE_COPIES = text("DELETE FROM articles a USING url_merges m WHERE a.id = m.copy RETURNING a.cluster_id")
# An article known by its URL (a feed without usable GUIDs) keeps being known by it
_SOURCES = text("SELECT id, feed_url FROM sources ORDER BY id")
_REWRITE_SOURCE = text("""UPDATE sources SET feed_url = :url
                          WHERE id = :id AND NOT EXISTS (SELECT FROM sources WHERE feed_url = :url)""")
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
    sources_left: tuple[int, ...] = ()  # sources whose new feed URL another source has: left as they were


async def renormalize_article_urls(db: Executor) -> Renormalized:
    """In the caller's transaction, holding the clustering lock until it ends."""
    await lock_clustering(db)
    for table in _TABLES:
        await db.execute(table)
    async for batch in _stored_urls(db):
        changes = [(id_, new) for id_, url in batch if (new := _normalized(url)) not in (url, None)]
        if changes:
            await db.execute(_ADD_CHANGES, {"ids": [c[0] for c in changes], "urls": [c[1] for c in changes]})
    await db.execute(_PLAN_MERGES)
    if await db.scalar(text("SELECT to_regclass('article_places') IS NOT NULL")):
        await db.execute(_CARRY_PLACES)
    for statement in _MERGE:
        await db.execute(statement)
    deleted = await delete_articles(db, _DELETE_COPIES, {}, [])
    rewritten = await db.execute(_REWRITE)
    await db.execute(_DROP_TABLES)
    sources, left = await _renormalize_sources(db)
    return Renormalized(int(getattr(rewritten, "rowcount", 0) or 0), deleted.articles, len(deleted.stories),
                        sources, left)  # fmt: skip


async def _renormalize_sources(db: Executor) -> tuple[int, tuple[int, ...]]:
    rewritten, left = 0, []
    for source in list(await db.execute(_SOURCES)):
        if (url := _normalized(source.feed_url)) in (source.feed_url, None):
            continue
        if getattr(await db.execute(_REWRITE_SOURCE, {"id": source.id, "url": url}), "rowcount", 0):
            rewritten += 1
        else:
            left.append(source.id)
    return rewritten, tuple(left)


async def _stored_urls(db: Executor) -> AsyncIterator[list[tuple[int, str]]]:
    after = 0
    while rows := [(row.id, row.url) for row in await db.execute(_STORED, {"after": after, "batch": BATCH})]:
        yield rows
        after = rows[-1][0]


def _normalized(url: str) -> str | None:
    """None for a stored URL the rules now refuse: it stays as it is."""
    try:
        return normalize_url(url)
    except InvalidUrl:
        return None
