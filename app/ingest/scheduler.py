"""The crawl tick: return abandoned claims to pending, then claim the sources that are due."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from app.settings import Settings
from app.sources import repository
from app.workers.metrics import count_released

log = logging.getLogger(__name__)


async def claim_due_sources(
    session: AsyncSession, settings: Settings, now: datetime | None = None, *, claimed_by: str | None = None
) -> list[int]:
    """Source ids this caller (the worker `claimed_by`) now owns, by claims named `now`; the caller enqueues one
    refresh for each after commit."""
    now = now or datetime.now(UTC)
    released = await repository.release_abandoned_claims(
        session, now=now, older_than=timedelta(minutes=settings.crawl_in_flight_timeout_minutes),
        silent_for=timedelta(seconds=settings.worker_gone_after_seconds),
    )  # fmt: skip
    if released.worker_gone or released.stale:
        log.warning("claims returned to pending: %d whose worker is gone, %d past the in-flight timeout",
                    released.worker_gone, released.stale)  # fmt: skip
        count_released(released.worker_gone, released.stale)
    return await repository.claim_due(session, now=now, limit=settings.crawl_batch_size, claimed_by=claimed_by,
                                      half_life_s=settings.crawl_priority_half_life_minutes * 60,
                                      head_start_s=settings.crawl_priority_head_start_seconds)  # fmt: skip
