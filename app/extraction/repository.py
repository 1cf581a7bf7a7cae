"""Every query on article texts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, any_, cast, select, text
from sqlalchemy.dialects.postgresql import ARRAY, insert

from app.articles.models import Article
from app.db.engine import Executor
from app.extraction.models import ArticleText
from app.extraction.text import ExtractedArticle
from app.sources.models import Source


@dataclass(frozen=True, slots=True)
class FetchTarget:
    """What fetching one article's page needs: its URL, whether its source wants it, what is stored already."""

    article_id: int
    url: str | None
    title: str
    declared_language: str | None
    wanted: bool  # the source fetches article pages
    has_text: bool
    etag: str | None
    last_modified: str | None


async def fetch_target(db: Executor, article_id: int) -> FetchTarget | None:
    query = (
        select(Article.id, Article.url, Article.title, Source.language, Source.article_text,
               ArticleText.text, ArticleText.etag, ArticleText.last_modified)
        .join(Source, Source.id == Article.source_id)
        .outerjoin(ArticleText, ArticleText.article_id == Article.id)
        .where(Article.id == article_id)
    )  # fmt: skip
    row = (await db.execute(query)).first()
    if row is None:
        return None
    return FetchTarget(row.id, row.url, row.title, row.language, row.article_text, bool(row.text), row.etag,
                       row.last_modified)  # fmt: skip


def _values(article_id: int, origin: str, found: ExtractedArticle | None, **extra: Any) -> dict[str, Any]:
    if found is None:
        return {"article_id": article_id, "origin": origin, "text": "", "html": "", "word_count": 0, **extra}
    return {
        "article_id": article_id, "origin": origin, "text": found.text, "html": found.html,
        "word_count": found.word_count, "title": found.title, "author": found.author,
        "published_at": found.published_at, "image": found.image, "language": found.language, **extra,
    }  # fmt: skip


async def save_feed_texts(db: Executor, found: dict[int, ExtractedArticle]) -> None:
    """Full texts that came with the feed, for articles just inserted."""
    if found:
        await db.execute(insert(ArticleText).on_conflict_do_nothing(),
                         [_values(article_id, "feed", text) for article_id, text in found.items()])  # fmt: skip
        await announce_changed(db, list(found))


async def save_page_text(
    db: Executor,
    article_id: int,
    found: ExtractedArticle | None,
    *,
    error_class: str | None = None,
    etag: str | None = None,
    last_modified: str | None = None,
) -> None:
    """The outcome of fetching an article's page: its text, or why there is none (stored too, so it is not sought
    again and again)."""
    values = _values(article_id, "page", found, error_class=error_class, etag=etag, last_modified=last_modified)
    statement = insert(ArticleText).values(**values)
    update = {k: statement.excluded[k] for k in values if k != "article_id"} | {"extracted_at": text("now()")}
    await db.execute(statement.on_conflict_do_update(index_elements=["article_id"], set_=update))
    if found is not None:
        await announce_changed(db, [article_id])


_SEARCH_EVENT = text("INSERT INTO outbox (topic, payload) VALUES ('search', CAST(:payload AS jsonb))")


async def announce_changed(db: Executor, article_ids: list[int]) -> None:
    """The search index takes the articles again, now with their text (the event articles' own trigger writes)."""
    await db.execute(_SEARCH_EVENT, {"payload": json.dumps({"articles": article_ids, "inserted": False})})


async def texts_of_articles(db: Executor, ids: Sequence[int]) -> list[ArticleText]:
    """The stored texts of these articles that have one (rows of pages without text left out)."""
    return list(await db.scalars(select(ArticleText).where(ArticleText.article_id.in_(ids), ArticleText.text != "")))


async def pages_unsought(
    db: Executor,
    *,
    crawled_since: datetime | None = None,
    crawled_before: datetime | None = None,
    source_id: int | None = None,
    below_id: int | None = None,
    only: Sequence[int] | None = None,
    limit: int,
) -> list[int]:
    """Articles, newest first, whose source wants their page and whose page was never sought: no text and no
    outcome stored (a page that failed, timed out or held no article has its row, and is not sought again)."""
    sought = select(ArticleText.article_id).where(ArticleText.article_id == Article.id).exists()
    query = (select(Article.id).join(Source, Source.id == Article.source_id)
             .where(Source.article_text, Article.url.is_not(None), ~sought)
             .order_by(Article.id.desc()).limit(limit))  # fmt: skip
    if crawled_since is not None:
        query = query.where(Article.crawled_at >= crawled_since)
    if crawled_before is not None:
        query = query.where(Article.crawled_at < crawled_before)
    if source_id is not None:
        query = query.where(Article.source_id == source_id)
    if below_id is not None:
        query = query.where(Article.id < below_id)
    if only is not None:
        query = query.where(Article.id == any_(cast(list(only), ARRAY(BigInteger))))
    return list(await db.scalars(query))
