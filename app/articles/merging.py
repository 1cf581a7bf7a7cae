"""Articles that prove to be one merged into the one kept (URL re-normalization, sources merged): the copy's
engagement, story, entities, text, fetches and copies carried to its keeper, then the copy deleted and its story
repaired. The merges to make are planned by the caller in the temporary table url_merges (copy, keeper)."""

from __future__ import annotations

from sqlalchemy import text

from app.db.engine import Executor
from app.stories.repair import ArticlesDeleted, delete_articles

# What references an article, and how a merge carries it to the article kept (tests/test_renormalize.py checks that
# this covers every foreign key to articles)
REFERENCES = ("articles.duplicate_of_id", "article_entities.article_id", "article_texts.article_id",
              "fetch_articles.article_id", "read_events.article_id", "share_links.article_id",
              "story_clusters.representative_article_id")  # fmt: skip

PLAN_TABLE = text("CREATE TEMP TABLE url_merges (copy bigint PRIMARY KEY, keeper bigint NOT NULL)")
DROP_PLAN = text("DROP TABLE url_merges")
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
# Tables a migration before theirs may merge articles without (migration 0020 runs these with no share_links yet)
_MERGE_WHERE_PRESENT = {
    # a reader's link to a copy goes on working, to the article kept; marked as carried by a merge, so that the
    # reader's own link to the kept article (one per reader and article) is neither refused nor replaced by it
    "share_links": text("""UPDATE share_links s SET article_id = m.keeper, from_merge = true FROM url_merges m
                           WHERE s.article_id = m.copy"""),
}
_DELETE_COPIES = text("DELETE FROM articles a USING url_merges m WHERE a.id = m.copy RETURNING a.cluster_id")


async def merge_planned(db: Executor) -> ArticlesDeleted:
    """The merges planned in url_merges carried out, in the caller's transaction (holding the clustering lock)."""
    for statement in _MERGE:
        await db.execute(statement)
    for table, statement in _MERGE_WHERE_PRESENT.items():
        if await db.scalar(text("SELECT to_regclass(:table)"), {"table": table}) is not None:
            await db.execute(statement)
    return await delete_articles(db, _DELETE_COPIES, {}, [])
