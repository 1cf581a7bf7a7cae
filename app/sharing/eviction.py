"""Cached destinations of links whose article or story was deleted (by a source's deletion, retention, a URL merge),
evicted from Redis: the code answers 410 within a flush interval instead of leading to a page we no longer hold."""

from __future__ import annotations

from datetime import datetime, timedelta

from redis.asyncio import Redis
from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.sharing.counters import PREFIX, ShareCounters
from app.sharing.models import ShareLink

WATERMARK = PREFIX + "gone-after"  # "instant|link id": links gone after it are not evicted yet
BATCH = 1000


async def evict_gone(db: async_sessionmaker[AsyncSession], redis: Redis, cache_s: int, now: datetime) -> int:
    """How many codes were evicted. Without a watermark (a new Redis), everything a cache could still hold."""
    raw = await redis.get(WATERMARK)
    instant, _, link_id = raw.decode().partition("|") if raw else ("", "", "")
    after = (datetime.fromisoformat(instant), int(link_id)) if instant else (now - timedelta(seconds=cache_s), 0)
    evicted = 0
    while True:  # one transaction may delete many targets at one instant: the id breaks the tie
        async with db() as session:
            rows = (await session.execute(select(ShareLink.id, ShareLink.code, ShareLink.gone_at)
                                          .where(tuple_(ShareLink.gone_at, ShareLink.id) > tuple_(*after))
                                          .order_by(ShareLink.gone_at, ShareLink.id).limit(BATCH))).all()  # fmt: skip
        if not rows:
            return evicted
        await ShareCounters(redis).forget([row.code for row in rows])
        evicted += len(rows)
        after = (rows[-1].gone_at, rows[-1].id)
        await redis.set(WATERMARK, f"{after[0].isoformat()}|{after[1]}")
