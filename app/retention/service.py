"""One retention pass over every kind of row (app/retention/policy.py says what is due): each kind deleted a bounded
batch per transaction until none is left, so no transaction holds its locks for long and ingest goes on between
batches. Interrupted, a pass leaves every story consistent; the next one finishes the work."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from prometheus_client import Counter as Metric
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.notifications import repository as alerts
from app.outbox import repository as outbox
from app.retention import repository
from app.retention.policy import KINDS, cutoffs
from app.settings import Settings

log = logging.getLogger(__name__)
DELETED = Metric("newsagg_retention_deleted", "Rows deleted by retention, by kind.", ["kind"])
ROWS_PER_ARTICLE = 20  # rows that hold up no clustering go this many times more per batch than articles and stories


@dataclass
class RetentionPass:
    deleted: Counter[str] = field(default_factory=Counter)  # kind -> rows deleted
    batch_seconds: dict[str, list[float]] = field(default_factory=dict)  # kind -> how long each batch's locks were held
    stories_repaired: set[int] = field(default_factory=set)  # stories that lost articles
    stories_emptied: int = 0

    @property
    def batches(self) -> int:  # transactions that deleted
        return sum(len(seconds) for seconds in self.batch_seconds.values())

    @property
    def longest_batch_s(self) -> float:
        return max((max(seconds) for seconds in self.batch_seconds.values()), default=0.0)


async def prune(db: AsyncEngine, settings: Settings, now: datetime) -> RetentionPass:
    due, done = cutoffs(settings, now), RetentionPass()
    rows, articles = settings.retention_article_batch * ROWS_PER_ARTICLE, settings.retention_article_batch
    # Stories first: those the articles below empty are deleted by the next pass, an hour on, once every clustering
    # worker has read that they are empty and let them go (a worker still holding one would write it back).
    for kind in ("stories", "read_events", "sessions", "fetch_log", "fetch_archive", "vocabulary"):
        if (before := getattr(due, kind)) is not None:
            size = articles if kind == "stories" else rows  # stories go under the clustering lock, as articles do
            rare = settings.vocabulary_rare_documents
            batch = partial(repository.delete_rows_batch, kind=kind, before=before, batch=size, rare=rare)
            await _in_batches(db, done, kind, size, batch)
    if due.articles is not None:
        batch = partial(_articles_batch, before=due.articles, settled=due.settled, batch=articles, done=done)
        await _in_batches(db, done, "articles", articles, batch)
    for topic, before in due.outbox.items():
        await _in_batches(db, done, "outbox", rows, partial(outbox.prune_delivered, topic=topic, older_than=before,
                                                            batch=rows))  # fmt: skip
    if settings.notify_retention_days > 0:  # readers' alerts; dead deliveries stay for administrators
        before = now - timedelta(days=settings.notify_retention_days)
        for kind in alerts.PRUNED:
            await _in_batches(db, done, kind, rows, partial(alerts.prune, kind=kind, before=before, batch=rows))
    if done.deleted:
        log.info("retention: deleted %s in %d batches (longest %.2f s); %d stories repaired, %d emptied",
                 dict(done.deleted), done.batches, done.longest_batch_s, len(done.stories_repaired),
                 done.stories_emptied)  # fmt: skip
    return done


def _due(kind: str, settings: Settings) -> dict[str, int]:
    """What besides age makes a row of `kind` due: a vocabulary term's rarity."""
    return {"rare": settings.vocabulary_rare_documents} if kind == "vocabulary" else {}


async def _articles_batch(connection: AsyncConnection, *, before: datetime, settled: datetime, batch: int,
                          done: RetentionPass) -> int:  # fmt: skip
    deleted = await repository.delete_articles_batch(connection, before=before, settled=settled, batch=batch)
    done.stories_repaired |= deleted.stories
    done.stories_emptied += deleted.emptied
    return deleted.articles


async def _in_batches(db: AsyncEngine, done: RetentionPass, kind: str, size: int,
                      delete_batch: Callable[[AsyncConnection], Awaitable[int]]) -> None:  # fmt: skip
    """`delete_batch` in a transaction of its own each time, until a batch comes back short of `size`."""
    while True:
        started = time.perf_counter()
        async with db.begin() as connection:
            deleted = await delete_batch(connection)
        if deleted:
            done.batch_seconds.setdefault(kind, []).append(time.perf_counter() - started)
            done.deleted[kind] += deleted
            DELETED.labels(kind).inc(deleted)
        if deleted < size:
            return


async def count_due(db: AsyncEngine, settings: Settings, now: datetime) -> dict[str, int | None]:
    """What a pass would delete now, by kind (None: that kind is kept forever)."""
    found, due_at = dict.fromkeys(KINDS), cutoffs(settings, now)
    async with db.connect() as connection:
        for kind in KINDS[:-1]:
            before = getattr(due_at, kind)
            if before is not None:
                extra = {"settled": due_at.settled} if kind == "articles" else _due(kind, settings)
                found[kind] = await repository.count_due(connection, kind, before=before, **extra)
        if due_at.outbox:
            found["outbox"] = sum([await repository.count_outbox_due(connection, topic, before=before)
                                   for topic, before in due_at.outbox.items()])  # fmt: skip
        for kind in alerts.PRUNED:  # readers' alerts (dead deliveries are kept)
            found[kind] = None
            if settings.notify_retention_days > 0:
                before = now - timedelta(days=settings.notify_retention_days)
                found[kind] = await alerts.count_due(connection, kind, before=before)
    return found
