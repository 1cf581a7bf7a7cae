"""Pushed feed content waiting to be ingested: a bounded list per source in Redis, drained by one job at a time.

A hub pushing without end must not grow the queue without end (one job per push, each holding its body, did): a push is
appended to its source's list, refused when that list is full (the API answers 503 and the hub retries later, as WebSub
hubs do), and a job is enqueued only by the push that finds none pending, marked by a key of the source's own (cleared
again should that enqueue fail). The job ingests the list's pushes in order, each removed only once it is stored (a job
cut short leaves it to its retry) and only if it still heads the list (two jobs of one source, the mark having expired
under a backlog, never remove a push neither stored); a push that can never be stored (not an outage, a deadlock) is set
aside in the source's dead list (the last DEAD_MOST, kept DEAD_SECONDS) rather than block those behind it, while one
that meets a deadlock, a lock timeout or an outage heads it still when its job, put off, runs again
(app/websub/intake.py; the mark kept meanwhile). The job clears the mark only when it finds the list empty, in one
script: a push coming after that enqueues a job anew, so none is left waiting without one. The mark expires
(PENDING_SECONDS) should its job be lost: the next push then enqueues one.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from prometheus_client import Counter
from redis.asyncio import Redis

PREFIX = "newsagg:websub:pushes:"
PENDING_SECONDS = 600  # a source's mark of a pending job, should that job be lost with a worker
DEAD_MOST, DEAD_SECONDS = 10, 7 * 86400  # pushes set aside per source, for an operator to read, and for how long
PUSHES_REFUSED = Counter("newsagg_websub_pushes_refused", "Pushes refused with 503: their source's list was full.")
PUSHES_DEAD = Counter("newsagg_websub_pushes_dead", "Pushes set aside: storing them failed other than by an outage.")

# KEYS: list, mark; ARGV: entry, most, mark seconds -> 0 refused, 1 held (a job pending), 2 held (enqueue a job)
_HOLD = """
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[1])
if redis.call('SET', KEYS[2], 1, 'NX', 'EX', tonumber(ARGV[3])) then return 2 end
return 1
"""
# KEYS: list, mark[, dead]; ARGV: entry, mark seconds, dead most, dead seconds -> 1 when `entry` headed the list (taken
# off it, into the dead list if one is named), 0 when it did not (another job of the source took it)
_TAKE = """
local taken = redis.call('LINDEX', KEYS[1], 0) == ARGV[1]
if taken then
  redis.call('LPOP', KEYS[1])
  if KEYS[3] then
    redis.call('RPUSH', KEYS[3], ARGV[1])
    redis.call('LTRIM', KEYS[3], -tonumber(ARGV[3]), -1)
    redis.call('EXPIRE', KEYS[3], tonumber(ARGV[4]))
  end
end
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2]))
return taken and 1 or 0
"""
# KEYS: list, mark -> 1 when pushes remain (the job goes on), 0 when none does (the mark cleared with the list empty)
_DONE = """
if redis.call('LLEN', KEYS[1]) > 0 then return 1 end
redis.call('DEL', KEYS[2])
return 0
"""


class Held(enum.Enum):
    REFUSED = 0  # the source's list is full
    PENDING = 1  # held; a job is pending already
    ENQUEUE = 2  # held; the caller enqueues the job


@dataclass(frozen=True, slots=True)
class Pushed:
    body: bytes
    content_type: str | None


def _keys(source_id: int) -> list[str]:
    return [f"{PREFIX}{source_id}", f"{PREFIX}{source_id}:pending"]


def dead_key(source_id: int) -> str:
    return f"{PREFIX}{source_id}:dead"


def _entry(pushed: Pushed) -> bytes:
    """A push as its list holds it (`next_push` reads it back: the same push makes the same entry)."""
    return (pushed.content_type or "").encode("latin-1", "replace") + b"\n" + pushed.body


async def hold(redis: Redis, source_id: int, pushed: Pushed, *, most: int) -> Held:
    args = [_entry(pushed), str(most), str(PENDING_SECONDS)]
    held = Held(int(await redis.eval(_HOLD, 2, *_keys(source_id), *args)))  # type: ignore[misc, arg-type]
    if held is Held.REFUSED:
        PUSHES_REFUSED.inc()
    return held


async def receive(
    redis: Redis, source_id: int, pushed: Pushed, *, most: int, enqueue: Callable[[int], Awaitable[object]]
) -> bool:
    """A verified push held for its source's ingest job, `enqueue`d when none is pending; False when refused."""
    held = await hold(redis, source_id, pushed, most=most)
    if held is Held.ENQUEUE:
        try:
            await enqueue(source_id)
        except BaseException:
            await redis.delete(_keys(source_id)[1])  # no job pending after all: the hub's retry enqueues one
            raise
    return held is not Held.REFUSED


async def next_push(redis: Redis, source_id: int) -> Pushed | None:
    """The oldest push waiting, left in its list until `done_with` it."""
    entry: bytes | None = await redis.lindex(_keys(source_id)[0], 0)  # type: ignore[misc]
    if entry is None:
        return None
    content_type, _, body = entry.partition(b"\n")
    return Pushed(body, content_type.decode("latin-1") or None)


async def done_with(redis: Redis, source_id: int, pushed: Pushed) -> bool:
    """`pushed` (the oldest push) stored: out of its list unless another job took it first (False), and the source's
    mark kept for as long again (the job is alive)."""
    return await _take(redis, _keys(source_id), pushed)


async def set_aside(redis: Redis, source_id: int, pushed: Pushed) -> bool:
    """`pushed` (the oldest push) could not be stored: moved to the source's dead list, counted, unless another job
    took it first (False)."""
    taken = await _take(redis, [*_keys(source_id), dead_key(source_id)], pushed)
    if taken:
        PUSHES_DEAD.inc()
    return taken


async def _take(redis: Redis, keys: list[str], pushed: Pushed) -> bool:
    args = [_entry(pushed), str(PENDING_SECONDS), str(DEAD_MOST), str(DEAD_SECONDS)]
    return bool(int(await redis.eval(_TAKE, len(keys), *keys, *args)))  # type: ignore[misc, arg-type]


async def put_off(redis: Redis, source_id: int) -> None:
    """The source's job put off (its oldest push to be tried again later, by a deferred job): the mark set for as long
    again, so that a push meanwhile enqueues no job beside it, and one lost with a worker is still replaced in time."""
    await redis.set(_keys(source_id)[1], 1, ex=PENDING_SECONDS)


async def finished(redis: Redis, source_id: int) -> bool:
    """True when the list is empty and the mark cleared (the next push enqueues a job); False when pushes remain."""
    return not int(await redis.eval(_DONE, 2, *_keys(source_id)))  # type: ignore[misc]


async def waiting(redis: Redis, source_id: int) -> int:
    return int(await redis.llen(_keys(source_id)[0]))  # type: ignore[misc]
