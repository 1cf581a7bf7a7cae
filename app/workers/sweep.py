"""The sweep of stranded work: workers whose heartbeat stopped are let go (the crawl tick then returns their claims),
claims whose refresh job is neither queued nor running (Redis lost it, or it was never enqueued) return to pending,
and articles stored but never understood or placed in a story (their job died with its worker, or Redis lost it) are
found, in batches for their jobs to be enqueued again. Understanding and clustering skip what is already done, so an
article enqueued twice costs a lookup, never a second story. Articles of the last hours whose page was never sought
and whose page job is neither queued nor running (Redis lost it, or it was never enqueued) are found too, for their
page jobs to be enqueued again."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles import repository as articles
from app.extraction import repository as texts
from app.extraction.page_jobs import queued_pages
from app.ingest.refresh_jobs import JobClaim, claim_of
from app.settings import Settings
from app.sources import repository as sources
from app.workers import repository as workers
from app.workers.metrics import CLAIMS_RELEASED, WORKERS_GONE

log = logging.getLogger(__name__)

BATCH = 500  # articles per job enqueued again
MOST = 10 * BATCH  # articles enqueued again per sweep: a backlog is taken oldest first, a part at a time
PAGES_MOST = 1000  # page jobs enqueued again per sweep, newest articles first
PAGES_LOOKED_AT = 5 * PAGES_MOST  # articles without a page looked at per sweep (a backlog queued: most are in hand)


@dataclass(frozen=True, slots=True)
class Sweep:
    workers_gone: list[str]
    batches: dict[int, list[int]]  # stranded article ids by id range (id // BATCH), each range one job


async def sweep(db: AsyncEngine, settings: Settings) -> Sweep:
    async with db.begin() as connection:
        gone = await workers.let_go(connection, silent_for=timedelta(seconds=settings.worker_gone_after_seconds))
        grace = timedelta(seconds=settings.sweep_grace_seconds)
        ids = await articles.stranded(connection, older_than=grace, limit=MOST)
    for worker in gone:
        log.warning("worker %s is gone (last heartbeat %s): its claims return to pending", worker.id,
                    worker.heartbeat_at.isoformat())  # fmt: skip
    WORKERS_GONE.inc(len(gone))
    batches: dict[int, list[int]] = defaultdict(list)
    for article_id in ids:
        batches[article_id // BATCH].append(article_id)
    return Sweep([w.id for w in gone], dict(batches))


async def release_jobless_claims(db: AsyncEngine, redis: Redis, settings: Settings) -> int:
    """Claims in flight for longer than the grace whose refresh job is not in the queue return to pending, due at once:
    the next tick claims them again. (arq keeps a job in its queue from enqueueing until it ends, and a job's retry or
    deferral is enqueued before it ends, so a claim with no job there has none anywhere.)"""
    now = datetime.now(UTC)
    queued = await queued_claims(redis, settings.queue_name)
    async with db.begin() as connection:
        held = await sources.in_flight_claims(
            connection, claimed_before=now - timedelta(seconds=settings.sweep_grace_seconds)
        )
        lost = [(source_id, at) for source_id, at in held if not _has_job(source_id, at, queued)]
        released = await sources.release_claims(connection, lost, now=now)
    if released:
        log.warning("%d in-flight claims had no refresh job queued or running: they return to pending", released)
    CLAIMS_RELEASED.labels("job_lost").inc(released)
    return released


async def queued_claims(redis: Redis, queue_name: str) -> set[JobClaim]:
    """The claims of every refresh job in the queue (waiting, deferred or running), read in one command: a scan in
    pages could miss a retry enqueued mid-scan by a job that then ends before the scan reaches it."""
    members = await redis.zrange(queue_name, 0, -1)
    claims = (claim_of(m.decode() if isinstance(m, bytes) else m) for m in members)
    return {claim for claim in claims if claim is not None}


def _has_job(source_id: int, claimed_at: datetime, queued: set[JobClaim]) -> bool:
    return JobClaim(source_id, claimed_at) in queued or JobClaim(source_id, None) in queued


async def lost_page_fetches(db: AsyncEngine, redis: Redis, settings: Settings) -> list[int]:
    """Articles stored in the last `article_sweep_hours` (and at least the grace ago) whose page was never sought and
    has no job queued or running, newest first, `PAGES_MOST` at most, `PAGES_LOOKED_AT` looked at. The database is
    read first and only those articles are asked of the queue, by name; the ones it has no job for are read again
    from the database: a job that ended in between has stored its outcome by then, and is not taken for lost."""
    if not (settings.article_text_enabled and settings.article_sweep_hours > 0):
        return []
    now, lost, below = datetime.now(UTC), list[int](), None
    since, before = (
        now - timedelta(hours=settings.article_sweep_hours),
        now - timedelta(seconds=settings.sweep_grace_seconds),
    )
    for _ in range(PAGES_LOOKED_AT // PAGES_MOST):
        async with db.connect() as connection:
            unsought = await texts.pages_unsought(connection, crawled_since=since, crawled_before=before,
                                                  below_id=below, limit=PAGES_MOST)  # fmt: skip
        lost += await _without_job(db, redis, settings, unsought)
        if len(unsought) < PAGES_MOST or len(lost) >= PAGES_MOST:
            break
        below = unsought[-1]
    return sorted(lost, reverse=True)[:PAGES_MOST]


async def _without_job(db: AsyncEngine, redis: Redis, settings: Settings, unsought: list[int]) -> list[int]:
    """Of these articles, those the queue has no page job for and whose page is still unsought."""
    queued = await queued_pages(redis, settings.article_queue_name, unsought)
    if not (jobless := [article_id for article_id in unsought if article_id not in queued]):
        return []
    async with db.connect() as connection:
        return await texts.pages_unsought(connection, only=jobless, limit=len(jobless))
