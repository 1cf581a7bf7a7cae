"""The article_places table: the places each article names, resolved to a country (and a region where known)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, SmallInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class ArticlePlace(Base):
    __tablename__ = "article_places"
    __table_args__ = (Index("ix_article_places_country_seen", "country", "seen_at"),)  # a region's recent articles

    article_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)  # the place entity's key: "loc:paris"
    name: Mapped[str] = mapped_column(String(200))  # as the article writes it
    country: Mapped[str] = mapped_column(String(2))  # ISO 3166-1 alpha-2
    region: Mapped[str | None] = mapped_column(String(6))  # ISO 3166-2 where known: "US-CA", "GB-SCT"
    mentions: Mapped[int] = mapped_column(SmallInteger)
    seen_at: Mapped[datetime]  # the article's arrival (crawled_at), as for entities
