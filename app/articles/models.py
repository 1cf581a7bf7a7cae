"""The articles table: content columns are insert-once; metadata columns each have one writer."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Computed, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.dialects.postgresql import ARRAY, TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class Article(Base):
    __tablename__ = "articles"
    __table_args__ = (
        UniqueConstraint("source_id", "external_id"),
        Index("ix_articles_published_id", "published_at", "id"),
        Index("ix_articles_source_published", "source_id", "published_at"),
        Index("ix_articles_search", "search_vector", postgresql_using="gin"),
        Index("ix_articles_topics", "topics", postgresql_using="gin"),
        Index("ix_articles_simhash_bands", "simhash_bands", postgresql_using="gin"),
        Index("ix_articles_unclustered", "id", postgresql_where=text("cluster_id IS NULL")),
        Index("ix_articles_duplicate_of", "duplicate_of_id", postgresql_where=text("duplicate_of_id IS NOT NULL")),
        Index("ix_articles_crawled_at", "crawled_at"),  # retention (migration 0015)
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(Text)
    url: Mapped[str | None] = mapped_column(Text, unique=True)  # NULL for entries known only by an id
    title: Mapped[str] = mapped_column(Text)
    summary: Mapped[str] = mapped_column(Text, default="")
    author: Mapped[str | None] = mapped_column(Text)
    published_at: Mapped[datetime]
    crawled_at: Mapped[datetime] = mapped_column(server_default=text("now()"))
    content_hash: Mapped[int] = mapped_column(BigInteger)
    simhash: Mapped[int | None] = mapped_column(BigInteger)
    simhash_bands: Mapped[list[int] | None] = mapped_column(ARRAY(Integer))  # LSH keys: see app/articles/simhash
    duplicate_of_id: Mapped[int | None] = mapped_column(ForeignKey("articles.id", ondelete="SET NULL"))
    language: Mapped[str | None] = mapped_column(String(16), index=True)
    topics: Mapped[list[str]] = mapped_column(ARRAY(String(32)), default=list, server_default=text("'{}'::varchar[]"))
    cluster_id: Mapped[int | None] = mapped_column(ForeignKey("story_clusters.id", ondelete="SET NULL"), index=True)
    click_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    share_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    search_vector: Mapped[str] = mapped_column(
        TSVECTOR,
        Computed(
            # migrations 0010 (languages, unaccent, CJK) and 0011 (topic, language and source lexemes for filters)
            "newsagg_search_vector(language, title, summary, topics, source_id)",
            persisted=True,
        ),
        deferred=True,  # only SQL reads it
    )
