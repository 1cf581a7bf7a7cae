"""Entities for articles understood before entities were extracted: `newsagg entities backfill`, in id order, a
batch per transaction, safe while ingest runs (a row ingest wrote first is left as it is)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from app.entities import repository
from app.entities.extractor import Entity, extract

BATCH = 500


def _extract_all(rows: list[tuple[int, str, str, str | None]]) -> dict[int, list[Entity]]:
    return {article_id: extract(title, summary, language) for article_id, title, summary, language in rows}


async def backfill(engine: AsyncEngine, *, batch: int = BATCH, progress: Callable[[int], None] | None = None) -> int:
    """Extracts and stores the entities of every understood article without any; returns how many were read."""
    done, after = 0, 0
    while True:
        async with engine.begin() as connection:
            rows = await repository.without_entities(connection, after=after, limit=batch)
            if not rows:
                return done
            await repository.save(connection, await asyncio.to_thread(_extract_all, rows))
        done, after = done + len(rows), rows[-1][0]
        if progress:
            progress(done)
