"""Trending signals in Redis sorted sets: arrivals and engagement per story in time buckets, read as a ranking.

    score = Σ over the window's buckets of weight(age) · (arrivals + ENGAGEMENT_WEIGHT · engagement)

where an arrival is one article joining the story, engagement is the readers' weighted actions on its articles
(click and read 1, share and save 2, dismiss 0: `_ACTION_WEIGHTS`), ENGAGEMENT_WEIGHT = 0.5 (two clicks count as
much as one more outlet reporting), and weight(age) falls linearly over the window (`app/trending/windows.py`).
Ids are the story ids as recorded; a story merged since then is counted towards the one it joined by the reader
(the API resolves ids and adds up what one story collects).

These are derived signals: recording never raises into ingest or a mutation (a failed write is logged and lost),
`scores` answers [] while Redis is unreachable (logged), and `ranking` raises `TrendingUnavailable`.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.trending.windows import BUCKET_SECONDS, LONGEST, bucket_of, retention_seconds, window_buckets
from app.users.interests import SIGNAL
from app.users.models import EngagementAction

log = logging.getLogger(__name__)

ENGAGEMENT_WEIGHT = 0.5
# The interest signals, negative ones counted as none: one reader's "not for me" (dismiss) is for their own feed,
# not a vote against a story.
_ACTION_WEIGHTS = {action: max(signal, 0.0) for action, signal in SIGNAL.items()}
PREFIX = "newsagg:trending:"
SCRATCH_SECONDS = 10  # the union sets of one read, should the reader die before deleting them


class TrendingUnavailable(RuntimeError):
    """Redis could not be read: the ranking is unknown (not empty)."""


@dataclass(frozen=True)
class Trend:
    story_id: int
    score: float
    arrivals: int  # articles that joined the story in the window
    engagement: float  # weighted reader actions in the window (undecayed)


async def record_arrivals(redis: Redis, placed: Mapping[int, int], now: datetime) -> None:
    """Articles just clustered (article id -> story id): each counts once towards its story."""
    await _increment(redis, "arrivals", Counter(placed.values()), now)


async def record_engagement(redis: Redis, story_id: int, weight: float, now: datetime) -> None:
    """`weight` units of reader engagement with the story (_ACTION_WEIGHTS says how much an action is worth)."""
    if weight:
        await record_engagements(redis, {story_id: weight}, now)


async def record_engagements(redis: Redis, weights: Mapping[int, float], now: datetime) -> None:
    """Engagement with many stories at once (story id -> weight), in one pipeline."""
    await _increment(redis, "engagement", {story: weight for story, weight in weights.items() if weight}, now)


async def record_reader_engagement(
    redis: Redis, reader_id: int, story_id: int, action: EngagementAction, now: datetime
) -> bool:
    """A reader's action on one of the story's articles, counted once per reader, story and action within the
    longest window (however many sessions or articles of the story they use). True when it was counted."""
    weight = _ACTION_WEIGHTS[action]
    if not weight:
        return False
    marker = f"{PREFIX}reader:{reader_id}:{story_id}:{action.value}"
    try:
        first = await redis.set(marker, 1, nx=True, ex=int(LONGEST.total_seconds()))
    except (RedisError, OSError) as error:
        log.warning("trending: engagement not counted, Redis unavailable: %s", error)
        return False
    if first:
        await record_engagement(redis, story_id, weight, now)
    return bool(first)


async def _increment(redis: Redis, signal: str, amounts: Mapping[int, float], now: datetime) -> None:
    if not amounts:
        return
    try:
        async with redis.pipeline(transaction=False) as pipe:
            for size in BUCKET_SECONDS:
                key = _bucket_key(signal, size, bucket_of(now, size))
                for story_id, amount in amounts.items():
                    pipe.zincrby(key, amount, str(story_id))
                pipe.expire(key, retention_seconds(size))
            await pipe.execute()
    except (RedisError, OSError) as error:
        log.warning("trending: %d stories' %s not counted, Redis unavailable: %s", len(amounts), signal, error)


async def scores(redis: Redis, window: timedelta, now: datetime, limit: int = 500) -> list[tuple[int, float]]:
    """(story id, score), best first, at most `limit`; [] (logged) while Redis is unreachable."""
    try:
        return [(trend.story_id, trend.score) for trend in await _read(redis, window, now, limit, breakdown=False)]
    except TrendingUnavailable as error:
        log.warning("trending: no scores: %s", error.__cause__)
        return []


async def ranking(redis: Redis, window: timedelta, now: datetime, limit: int = 500) -> list[Trend]:
    """Stories by score, best first, at most `limit`, each with its arrivals and engagement in the window.
    Raises TrendingUnavailable when Redis cannot be read."""
    return await _read(redis, window, now, limit, breakdown=True)


async def _read(redis: Redis, window: timedelta, now: datetime, limit: int, *, breakdown: bool) -> list[Trend]:
    size, weighted = window_buckets(window, now)
    if limit <= 0:
        return []
    arrivals = {_bucket_key("arrivals", size, bucket): weight for bucket, weight in weighted}
    engagement = {_bucket_key("engagement", size, bucket): weight for bucket, weight in weighted}
    scratch = f"{PREFIX}scratch:{uuid.uuid4().hex}"
    unions = {scratch + ":score": arrivals | {key: w * ENGAGEMENT_WEIGHT for key, w in engagement.items()}}
    if breakdown:  # the same buckets undecayed: what happened in the window
        unions |= {scratch + ":arrivals": dict.fromkeys(arrivals, 1.0),
                   scratch + ":engagement": dict.fromkeys(engagement, 1.0)}  # fmt: skip
    try:
        async with redis.pipeline(transaction=True) as pipe:
            for key, weights in unions.items():
                pipe.zunionstore(key, weights)
                pipe.expire(key, SCRATCH_SECONDS)
            pipe.zrange(scratch + ":score", 0, limit - 1, desc=True, withscores=True)
            if not breakdown:  # the score is all that is wanted: drop the scratch key in the same round trip
                pipe.delete(*unions)
            top: list[tuple[bytes, float]] = (await pipe.execute())[2 * len(unions)]  # the zrange's reply
        ids = [member.decode() for member, _ in top]
        parts: list[list[float | None]] = []
        if breakdown:
            async with redis.pipeline(transaction=False) as pipe:
                for key in list(unions)[1:] if ids else []:
                    pipe.zmscore(key, ids)
                pipe.delete(*unions)
                parts = (await pipe.execute())[:-1]
    except (RedisError, OSError) as error:
        raise TrendingUnavailable("Redis unavailable") from error
    counted, engaged = parts or ([None] * len(ids), [None] * len(ids))
    return [Trend(int(member), score, round(count or 0), engaged_ or 0.0)
            for (member, score), count, engaged_ in zip(top, counted, engaged, strict=True)]  # fmt: skip


def fold_merged(trends: Sequence[Trend], resolved: Mapping[int, int]) -> list[Trend]:
    """The ranking with each story id replaced by the story it is now (`resolved`: id -> survivor; ids missing from
    it are dropped), what several ids collected added up, best first (ties: the older story)."""
    folded: dict[int, Trend] = {}
    for trend in trends:
        story_id = resolved.get(trend.story_id)
        if story_id is None:
            continue
        seen = folded.get(story_id, Trend(story_id, 0.0, 0, 0.0))
        folded[story_id] = Trend(story_id, seen.score + trend.score, seen.arrivals + trend.arrivals,
                                 seen.engagement + trend.engagement)  # fmt: skip
    return sorted(folded.values(), key=lambda t: (-t.score, t.story_id))


def _bucket_key(signal: str, size: int, bucket: int) -> str:
    return f"{PREFIX}{signal}:{size}:{bucket}"
