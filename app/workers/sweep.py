"""The sweep of stranded work: workers whose heartbeat stopped are let go (the crawl tick then returns their claims),
and articles stored but never understood or placed in a story (their job died with its worker, or Redis lost it) are
found, in batches for their jobs to be enqueued again. Understanding and clustering skip what is already done, so an
article enqueued twice costs a lookup, never a second story."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles import repository as articles
from app.settings import Settings
from app.workers import repository as workers
from app.workers.metrics import WORKERS_GONE

log = logging.getLogger(__name__)

BATCH = 500  # articles per job enqueued again
MOST = 10 * BATCH  # articles enqueued again per sweep: a backlog is taken oldest first, a part at a time


@dataclass(frozen=True, slots=True)
class Sweep:
    workers_gone: list[str]
    batches: dict[int, list[int]]  # stranded article ids by id range (id // BATCH), each range one job


async def sweep(db: AsyncEngine, settings: Settings) -> Sweep:
    async with db.begin() as connection:
        gone = await workers.let_go(connection, silent_for=timedelta(seconds=settings.worker_gone_after_seconds))
        ids = await articles.stranded(connection, older_than=timedelta(seconds=settings.sweep_grace_seconds),
                                      limit=MOST)  # fmt: skip
    for worker in gone:
        log.warning("worker %s is gone (last heartbeat %s): its claims return to pending", worker.id,
                    worker.heartbeat_at.isoformat())  # fmt: skip
    WORKERS_GONE.inc(len(gone))
    batches: dict[int, list[int]] = defaultdict(list)
    for article_id in ids:
        batches[article_id // BATCH].append(article_id)
    return Sweep([w.id for w in gone], dict(batches))
