"""Reading the outbox: the events of a topic after a given one (clients catching up)."""

from __future__ import annotations

from sqlalchemy import select

from app.db.engine import Executor
from app.outbox.models import OutboxEvent


async def events_after(db: Executor, topic: str, *, after: int | None, limit: int) -> list[OutboxEvent]:
    """Oldest first: what a client that saw event `after` has missed."""
    query = select(OutboxEvent).where(OutboxEvent.topic == topic).order_by(OutboxEvent.id).limit(limit)
    if after is not None:
        query = query.where(OutboxEvent.id > after)
    return list(await db.scalars(query))


async def events_by_ids(db: Executor, topic: str, ids: list[int]) -> list[OutboxEvent]:
    return list(await db.scalars(select(OutboxEvent).where(OutboxEvent.topic == topic, OutboxEvent.id.in_(ids))))
