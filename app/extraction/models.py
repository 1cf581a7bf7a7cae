"""The article_texts table: one row per article whose full text was sought, stored once (cleaned text and its
sanitized HTML), whether it came from the feed (content:encoded) or from the article's page."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, func, text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class ArticleText(Base):
    __tablename__ = "article_texts"
    __table_args__ = (
        # what search reads of the text (migration 0027, app/search/body.py): its words, computed by the index only
        Index(
            "ix_article_texts_body",
            text("newsagg_body_vector(search_language, text)"),
            postgresql_using="gin",
            postgresql_where=text("search_language IS NOT NULL"),
        ),
        # the texts stored before 0027 that search has not indexed yet (migration 0029, app/search/bodies.py)
        Index("ix_article_texts_unindexed", "article_id", postgresql_where=text("search_language IS NULL")),
    )

    article_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True)
    origin: Mapped[str] = mapped_column(String(8))  # feed | page
    text: Mapped[str] = mapped_column(Text, default="")  # plain; empty when nothing was found (see error_class)
    html: Mapped[str] = mapped_column(Text, default="")  # sanitized (app/extraction/sanitize.py)
    word_count: Mapped[int] = mapped_column(Integer, default=0)
    title: Mapped[str | None] = mapped_column(Text)  # as the page states them
    author: Mapped[str | None] = mapped_column(Text)
    published_at: Mapped[datetime | None]
    image: Mapped[str | None] = mapped_column(Text)  # the lead image's URL
    language: Mapped[str | None] = mapped_column(String(16))
    error_class: Mapped[str | None] = mapped_column(String(64))  # why there is no text: robots_disallowed, empty...
    etag: Mapped[str | None] = mapped_column(Text)  # the page's validators, for a conditional GET when fetched again
    last_modified: Mapped[str | None] = mapped_column(Text)
    extracted_at: Mapped[datetime] = mapped_column(server_default=func.now())
    # the article's language as search stems the text in, set by triggers when the text is written or the article's
    # language changes ('' none); NULL: stored before migration 0027 and not yet indexed (app/search/bodies.py)
    search_language: Mapped[str | None] = mapped_column(String(16))
