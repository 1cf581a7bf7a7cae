"""Storing a source's held pushes (app/websub/pushes.py), oldest first, a bounded number a run: each stored as a
fetched document is, its source brought forward in the crawl, what follows a committed ingest started, and then taken
off its list. A push whose storing fails for good (data PostgreSQL refuses, a bug) is set aside so that those behind it
are stored; one that meets a passing failure (a deadlock, a lock timeout, a serialization failure, a cancelled
statement, PostgreSQL unreachable) stays at the head of its list, and the run ends asking to be tried again soon,
after a jittered back-off, rather than wait for its source's mark to expire."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from prometheus_client import Counter
from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.ingest.priority import raise_sources
from app.ingest.refresh import RefreshOutcome, ingest_body
from app.observability.work import count_push
from app.resilience.backoff import retry_wait
from app.resilience.metrics import DATABASE_RETRIES
from app.resilience.outage import transient, unreachable
from app.settings import Settings
from app.websub import pushes

log = logging.getLogger(__name__)
PUSHES_PER_RUN = 20  # a run (one job) stays short, well within arq's job timeout, however many pushes wait
RETRY_FIRST_S, RETRY_CAP_S = 1.0, 60.0  # a run cut short waits up to 1, 2, 4 … 60 s (full jitter) before the next
PUSH_RETRIES = Counter(
    "newsagg_websub_push_retries",
    "Runs of a source's pushes cut short by a passing database failure (a deadlock, a lock timeout, an outage), their "
    "push left at the head of its list and tried again after a back-off.",
)

FollowUp = Callable[[int, RefreshOutcome], Awaitable[None]]  # what follows a committed ingest of a source (its jobs)


@dataclass(frozen=True, slots=True)
class Intake:
    """What a run did: `status` is its last push's ("none" when none waited, "dead" when set aside, "retry" when the
    run was cut short, else its ingest's); when `more` wait, the caller enqueues the next run (after `retry_in_s`,
    when given, counting `failures` in a row)."""

    status: str
    more: bool
    retry_in_s: float | None = None
    failures: int = 0


async def store_held(db: AsyncEngine, redis: Redis, settings: Settings, source_id: int, follow_up: FollowUp, *,
                     failures: int = 0) -> Intake:  # fmt: skip
    """The source's held pushes stored, oldest first, at most PUSHES_PER_RUN; `failures` counts the runs before this
    one cut short in a row, each at its first push."""
    status = "none"
    for taken in range(PUSHES_PER_RUN):
        if (pushed := await pushes.next_push(redis, source_id)) is None:
            break
        try:
            status = await _store_held(db, redis, settings, source_id, pushed, follow_up)
        except Exception as error:
            if not transient(error):
                raise  # a lost Redis: for the job's retry
            return await _put_off(redis, source_id, error, (0 if taken else failures) + 1)
    return Intake(status, more=not await pushes.finished(redis, source_id))


async def store_push(db: AsyncEngine, settings: Settings, source_id: int, pushed: pushes.Pushed,
                     follow_up: FollowUp) -> str:  # fmt: skip
    """One push stored: the ingest's status."""
    outcome = await ingest_body(db, settings, source_id, pushed.body, pushed.content_type)
    # a hub may push only the newest entries, or none (a light ping): the source is crawled soon, first among peers
    async with db.begin() as connection:
        await raise_sources(connection, settings, [source_id], reason="websub", now=datetime.now(UTC))
    await follow_up(source_id, outcome)
    count_push(len(outcome.new_article_ids))
    return outcome.status


async def _store_held(db: AsyncEngine, redis: Redis, settings: Settings, source_id: int, pushed: pushes.Pushed,
                      follow_up: FollowUp) -> str:  # fmt: skip
    """A held push stored and taken off its list. One whose storing fails for good would fail every run that reads it
    again, and block its source's pushes behind it: it is set aside in the source's dead list instead (a passing
    failure, or a lost Redis, leaves it where it is)."""
    try:
        status = await store_push(db, settings, source_id, pushed, follow_up)
    except Exception as error:
        if transient(error) or isinstance(error, RedisError):
            raise
        log.exception("push of source %d (%d bytes) set aside in %s", source_id, len(pushed.body),
                      pushes.dead_key(source_id))  # fmt: skip
        await pushes.set_aside(redis, source_id, pushed)
        return "dead"
    await pushes.done_with(redis, source_id, pushed)
    return status


async def _put_off(redis: Redis, source_id: int, error: Exception, failures: int) -> Intake:
    """The run cut short: the source's mark kept (a run is pending, so a push meanwhile enqueues none), the wait until
    the next drawn from the back-off of `failures` in a row."""
    wait = retry_wait(failures, RETRY_FIRST_S, RETRY_CAP_S)
    await pushes.put_off(redis, source_id)
    PUSH_RETRIES.inc()
    if unreachable(error):
        DATABASE_RETRIES.inc()
    log.warning("pushes of source %d: storing the oldest failed (%s: %s); tried again in %.1f s (failure %d in a row)",
                source_id, type(error).__name__, str(error).split("\n", 1)[0], wait, failures)  # fmt: skip
    return Intake("retry", more=True, retry_in_s=wait, failures=failures)
