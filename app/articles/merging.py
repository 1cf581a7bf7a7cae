"""Articles that prove to be one merged into the one kept (URL re-normalization, sources merged): the copy's
engagement, story, entities, text, fetches and copies carried to its keeper, then the copy deleted and its story
repaired. The merges to make are planned by the caller in the temporary table url_merges (copy, keeper)."""

from __future__ import annotations

from app.articles import repository as articles
from app.db.engine import Executor
from app.stories.repair import ArticlesDeleted, delete_articles

# What references an article, and how a merge carries it to the article kept (tests/test_renormalize.py checks that
# this covers every foreign key to articles)
REFERENCES = ("articles.duplicate_of_id", "article_entities.article_id", "article_places.article_id",
              "article_texts.article_id",
              "fetch_articles.article_id", "read_events.article_id", "share_links.article_id",
              "story_clusters.representative_article_id")  # fmt: skip


async def merge_planned(db: Executor) -> ArticlesDeleted:
    """The merges planned in url_merges carried out, in the caller's transaction (holding the clustering lock)."""
    await articles.merge_into_keepers(db)
    return await delete_articles(db, articles.DELETE_MERGED_COPIES, {}, [])
