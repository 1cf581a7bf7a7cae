"""The sweep of stranded work: workers whose heartbeat stopped are let go (the crawl tick then returns their claims),
claims whose refresh job is neither queued nor running (Redis lost it, or it was never enqueued) return to pending,
and articles stored but never understood or placed in a story (their job died with its worker, or Redis lost it) are
found, in batches for their jobs to be enqueued again. Understanding and clustering skip what is already done, so an
article enqueued twice costs a lookup, never a second story. Likewise articles whose page was to be fetched for its
text and has no outcome stored (its job lost with Redis's queue, or failed while the database was away): fetching a
page skips an article that has its text, so one enqueued twice costs a lookup."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles import repository as articles
from app.extraction import repository as pages
from app.ingest.refresh_jobs import JobClaim, claim_of
from app.settings import Settings
from app.sources import repository as sources
from app.workers import repository as workers
from app.workers.metrics import CLAIMS_RELEASED, WORKERS_GONE

log = logging.getLogger(__name__)

BATCH = 500  # articles per job enqueued again
MOST = 10 * BATCH  # articles enqueued again per sweep: a backlog is taken oldest first, a part at a time


TEXTS_WITHIN = timedelta(days=1)  # an article's page is sought again for a day; older ones are news gone by


@dataclass(frozen=True, slots=True)
class Sweep:
    workers_gone: list[str]
    batches: dict[int, list[int]]  # stranded article ids by id range (id // BATCH), each range one job
    texts: list[int] = field(default_factory=list)  # articles whose page-fetching job was lost


async def sweep(db: AsyncEngine, settings: Settings) -> Sweep:
    async with db.begin() as connection:
        gone = await workers.let_go(connection, silent_for=timedelta(seconds=settings.worker_gone_after_seconds))
        grace = timedelta(seconds=settings.sweep_grace_seconds)
        ids = await articles.stranded(connection, older_than=grace, limit=MOST)
        texts = (await pages.texts_never_sought(connection, older_than=grace, within=TEXTS_WITHIN, limit=MOST)
                 if settings.article_text_enabled else [])  # fmt: skip
    for worker in gone:
        log.warning("worker %s is gone (last heartbeat %s): its claims return to pending", worker.id,
                    worker.heartbeat_at.isoformat())  # fmt: skip
    WORKERS_GONE.inc(len(gone))
    batches: dict[int, list[int]] = defaultdict(list)
    for article_id in ids:
        batches[article_id // BATCH].append(article_id)
    return Sweep([w.id for w in gone], dict(batches), texts)


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
