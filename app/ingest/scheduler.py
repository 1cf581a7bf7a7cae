"""The crawl tick: return stale claims to pending, then claim the sources that are due."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from app.settings import Settings
from app.sources import repository


async def claim_due_sources(session: AsyncSession, settings: Settings, now: datetime | None = None) -> list[int]:
    """Source ids this caller now owns; the caller enqueues one refresh for each after commit."""
    now = now or datetime.now(UTC)
    await repository.release_stale_claims(
        session, now=now, older_than=timedelta(minutes=settings.crawl_in_flight_timeout_minutes)
    )
    return await repository.claim_due(session, now=now, limit=settings.crawl_batch_size)
