"""Page fetches for articles stored before their pages were fetched (or while no article worker ran): the articles
without any text or outcome, newest first, in pages, each page's jobs enqueued before the next is read. Idempotent:
an article whose page job is queued is not queued twice, and one whose page was sought has its row."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from app.extraction import repository as texts

PAGE = 500

Enqueue = Callable[[list[int]], Awaitable[int]]  # page jobs for these articles; how many were new


@dataclass(frozen=True, slots=True)
class Backfilled:
    found: int  # articles without text or outcome
    queued: int  # page jobs enqueued
    already_queued: int  # articles whose page job was queued already

    def as_json(self) -> dict[str, int]:
        return {"found": self.found, "queued": self.queued, "already_queued": self.already_queued}


async def backfill(
    db: AsyncEngine,
    enqueue: Enqueue,
    *,
    source_id: int | None = None,
    since: datetime | None = None,
    limit: int | None = None,
    progress: Callable[[Backfilled], None] = lambda done: None,
) -> Backfilled:
    found = queued = 0
    below: int | None = None
    while limit is None or found < limit:
        size = PAGE if limit is None else min(PAGE, limit - found)
        async with db.connect() as connection:
            ids = await texts.pages_unsought(connection, crawled_since=since, source_id=source_id, below_id=below,
                                             limit=size)  # fmt: skip
        if not ids:
            break
        queued += await enqueue(ids)
        found += len(ids)
        below = ids[-1]
        progress(Backfilled(found, queued, found - queued))
    return Backfilled(found, queued, found - queued)
