"""Long-lived handles a process shares across requests or jobs: settings, database, Redis, broadcaster, cache."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.caching import SingleFlightCache
from app.db.engine import create_engine, session_factory
from app.notifications.router import NotificationRouter
from app.ratelimit.policies import RateLimits
from app.realtime.broadcast import Broadcaster
from app.realtime.catchup import read_missed
from app.redis_client import redis_client
from app.resilience.outage import DatabaseOutage
from app.search.service import Search
from app.settings import Settings
from app.sharing.keys import SigningKey


class RedisNotConfigured(RuntimeError):
    """No REDIS_URL and no embedded Redis started for this process."""


@dataclass
class Services:
    settings: Settings
    engine: AsyncEngine
    db: async_sessionmaker[AsyncSession]
    redis: Redis
    broadcaster: Broadcaster
    cache: SingleFlightCache
    search: Search
    rate_limits: RateLimits
    notifications: NotificationRouter  # the live notificationAdded subscriptions of this process
    share_key: SigningKey
    # the live subscriptions' credential checks (app/api/live_auth.py): an outage of their own, so a check that
    # succeeds never reports over an outage the notification router's reads are still in
    live_auth: DatabaseOutage = field(default_factory=lambda: DatabaseOutage("live_auth"))

    @classmethod
    def open(cls, settings: Settings, *, pre_ping: bool = True) -> Services:
        if not settings.redis_url:
            raise RedisNotConfigured("REDIS_URL is not set: run `newsagg up` (starts embedded Redis) or set REDIS_URL")
        engine = create_engine(settings, pre_ping=pre_ping)
        redis = redis_client(settings)  # bounded: a Redis that hangs fails calls, as one that refuses does
        sessions = session_factory(engine)
        broadcaster = Broadcaster(redis, missed=partial(read_missed, engine),
                                  catch_up_seconds=settings.broadcast_catch_up_seconds,
                                  backoff_cap=settings.redis_backoff_max_seconds,
                                  liveness_seconds=settings.broadcast_liveness_seconds)  # fmt: skip
        return cls(settings, engine, sessions, redis, broadcaster, SingleFlightCache(redis),
                   Search(settings, sessions, redis), RateLimits(redis, settings),
                   NotificationRouter(sessions, broadcaster), SigningKey(sessions))  # fmt: skip

    async def close(self) -> None:
        await self.notifications.close()
        await self.broadcaster.close()
        await self.redis.aclose()
        await self.engine.dispose()
