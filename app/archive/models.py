"""The archive's tables: one compressed body per successful fetch, and the articles each fetch stored or changed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, SmallInteger, String, Text, func, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class ArchivedFetch(Base):
    """A fetch log row's body as received; it shares the fetch's id and goes when the fetch log row goes."""

    __tablename__ = "fetch_archive"
    __table_args__ = (
        Index("ix_fetch_archive_source_fetched", "source_id", "fetched_at"),
        Index("ix_fetch_archive_references", "source_id", "id", postgresql_where=text("reference_id IS NULL")),
    )

    id: Mapped[int] = mapped_column(ForeignKey("fetch_log.id", ondelete="CASCADE"), primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"))
    fetched_at: Mapped[datetime] = mapped_column(server_default=func.now(), index=True)  # retention walks it
    url: Mapped[str] = mapped_column(Text)
    status_code: Mapped[int] = mapped_column(SmallInteger)
    headers: Mapped[dict[str, Any]] = mapped_column(JSONB)
    raw_bytes: Mapped[int] = mapped_column(Integer)
    # The body this one is compressed against (one of its source's stored whole), or NULL for a body stored whole;
    # a reference deleted takes the bodies compressed against it along (retention deletes it only after them)
    reference_id: Mapped[int | None] = mapped_column(ForeignKey("fetch_archive.id", ondelete="CASCADE"), index=True)
    body: Mapped[bytes] = mapped_column(LargeBinary)  # zstd frame; STORAGE EXTERNAL (migration 0019): no 2nd pass


class FetchedArticle(Base):
    """What a fetch produced: the articles it stored (`new`), or whose text a replay of it changed (`updated`)."""

    __tablename__ = "fetch_articles"

    fetch_id: Mapped[int] = mapped_column(ForeignKey("fetch_log.id", ondelete="CASCADE"), primary_key=True)
    article_id: Mapped[int] = mapped_column(ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True, index=True)
    change: Mapped[str] = mapped_column(String(16), primary_key=True)
