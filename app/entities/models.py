"""The article_entities table: the people, organisations and places each article names, one row per entity."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, SmallInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class ArticleEntity(Base):
    __tablename__ = "article_entities"
    __table_args__ = (
        Index("ix_article_entities_key_seen", "key", "seen_at"),  # one entity's articles over time (trends)
        Index("ix_article_entities_seen", "seen_at"),  # every mention of a window (trending entities)
    )

    article_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)  # kind and folded name: "per:angela merkel"
    name: Mapped[str] = mapped_column(String(200))  # as the article writes it
    kind: Mapped[str] = mapped_column(String(3))  # PER, ORG or LOC
    mentions: Mapped[int] = mapped_column(SmallInteger)  # in headline and summary
    role: Mapped[str | None] = mapped_column(String(40))  # "president", when the article says so
    seen_at: Mapped[datetime]  # when the article arrived (its crawled_at): trends count arrivals
