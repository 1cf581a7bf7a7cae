"""The outbox relay: events committed with the data are published on Redis afterwards, at least once.

Each run takes the oldest undelivered events of the given topics (rows locked with SKIP LOCKED, so two relays never
take the same ones), publishes them in order and stamps them delivered. When Redis is down the events stay in the
outbox with their attempts counted and the error kept, and the next run delivers them: nothing is lost. An event
carries its outbox id (`event_id`), so a consumer that sees one twice (a relay that died between publishing and
committing) can tell.

An event that fails while Redis still answers a PING is the problem itself (a poisoned event, such as one larger
than Redis accepts): it is set aside with a back-off, the events after it go on, and after `max_attempts` it is
dead (kept in the outbox with its error, never taken again) instead of being retried forever.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.outbox import repository as outbox
from app.outbox.rounds import drain
from app.realtime.broadcast import publish

log = logging.getLogger(__name__)
BATCH = 100


MAX_ATTEMPTS = 20  # a poisoned event is dead after this many failures on a reachable Redis
POISON_BACKOFF_CAP_S = 300.0


async def relay(db: AsyncEngine, redis: Redis, topics: Sequence[str], *, limit: int = BATCH,
                max_attempts: int = MAX_ATTEMPTS) -> int:  # fmt: skip
    """Publishes pending events of `topics`; returns how many were delivered."""
    async with db.begin() as connection:
        rows = await outbox.take_pending(connection, topics, limit)
        delivered: list[int] = []
        for index, row in enumerate(rows):
            try:
                await publish(redis, row.topic, {**row.payload, "event_id": row.id})
            except (RedisError, OSError, ValueError, TypeError) as error:
                reason = f"{type(error).__name__}: {error}"
                if await _answers(redis):
                    dead = await outbox.mark_poisoned(connection, row.id, reason, max_attempts=max_attempts,
                                                      cap_seconds=POISON_BACKOFF_CAP_S)  # fmt: skip
                    log.warning("outbox: %s event %d fails on a reachable Redis%s: %s", row.topic, row.id,
                                " and is now dead" if dead else ", set aside", reason)  # fmt: skip
                    continue
                pending = [r.id for r in rows[index:]]
                log.warning("outbox: %d %s event(s) not delivered, kept for the next run: %s", len(pending),
                            row.topic, error)  # fmt: skip
                await outbox.mark_failed(connection, pending, reason)
                break
            delivered.append(row.id)
        if delivered:
            await outbox.mark_delivered(connection, delivered)
    return len(delivered)


async def _answers(redis: Redis) -> bool:
    """Whether Redis answers a PING now: if so, a failed publish was the event's fault, not Redis being down. Twice:
    the first may go out on the connection the refusal closed."""
    for _ in range(2):
        try:
            return bool(await redis.ping())
        except (RedisError, OSError):
            continue
    return False


async def relay_all(db: AsyncEngine, redis: Redis, topics: Sequence[str], *, max_attempts: int = MAX_ATTEMPTS) -> int:
    """Publishes every pending event of `topics`, topic by topic in the order given (an earlier topic never waits
    behind a later one's backlog), batch after batch until a topic is drained; returns how many were delivered."""
    return sum(
        [
            await drain(functools.partial(relay, db, redis, (topic,), max_attempts=max_attempts), batch=BATCH)
            for topic in topics
        ]
    )
