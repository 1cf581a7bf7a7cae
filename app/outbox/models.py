"""Outbox rows survive Redis or search being down; a relay delivers and stamps them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, Text, func, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class OutboxEvent(Base):
    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_undelivered", "topic", "id", postgresql_where=text("delivered_at IS NULL")),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(String(64))
    # Deduplicates events such as "story 42 became breaking": a second insert with the same key is ignored.
    dedupe_key: Mapped[str | None] = mapped_column(Text, unique=True)
    payload: Mapped[dict[str, object]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    delivered_at: Mapped[datetime | None]
    retry_at: Mapped[datetime | None]  # a failed event waits until then (back-off)
    last_error: Mapped[str | None] = mapped_column(Text)
    dead_at: Mapped[datetime | None]  # a poisoned event: it failed on a reachable Redis too often, never taken again
