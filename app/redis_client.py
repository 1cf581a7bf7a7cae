"""Every Redis client of newsagg is made here: connects and commands bounded by NEWSAGG_REDIS_TIMEOUT_SECONDS, so a
Redis that hangs (stopped, partitioned, stalled) fails calls as a refused one does instead of holding them forever."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.resilience.metrics import REDIS_SILENCES
from app.settings import Settings

log = logging.getLogger(__name__)

C = TypeVar("C", bound=Redis)
T = TypeVar("T")
TIMEOUTS = (RedisTimeoutError, TimeoutError)  # redis-py's, or asyncio's before redis-py wraps it


class RedisSilent(RedisConnectionError):
    """Raised without asking Redis: it left a call unanswered a moment ago. A ConnectionError, so every path that
    degrades when Redis refuses a connection degrades the same way."""


class Silence:
    """When the Redis of one pool last left a call unanswered: for `seconds` after that, calls fail at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._until = 0.0

    def noted(self, error: BaseException) -> None:
        if time.monotonic() >= self._until:  # counted and logged once per silence, not once per waiting call
            REDIS_SILENCES.inc()
            log.warning("Redis left a call unanswered for %g s (%s: %s); not asked again for as long",
                        self.seconds, type(error).__name__, error)  # fmt: skip
        self._until = time.monotonic() + self.seconds

    def check(self) -> None:
        if time.monotonic() < self._until:
            raise RedisSilent(f"Redis left a call unanswered for {self.seconds:g} s a moment ago; not asked")


class WatchfulPool(ConnectionPool):
    """redis-py's pool, made for a Redis that hangs:

    - a connection is made outside the pool's lock: redis-py 5 holds the lock while connecting (redis-py issue 3842),
      so every caller queued behind a connect to a hung Redis would pay the timeout in turn, one after the other;
    - after a timeout, calls fail at once for as long (RedisSilent): a request making several calls pays the timeout
      once, not once per call."""

    def __init__(self, *, silence: Silence, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.silence = silence

    async def get_connection(self, command_name: Any = None, *keys: Any, **options: Any) -> AbstractConnection:
        self.silence.check()
        async with self._lock:
            connection: AbstractConnection = self.get_available_connection()  # type: ignore[no-untyped-call]
        try:
            await self.ensure_connection(connection)
        except BaseException as error:
            if isinstance(error, TIMEOUTS):
                self.silence.noted(error)
            await self.release(connection)
            raise
        return connection


class NotingRetry(Retry):
    """redis-py's default for a connection (no retry), noting a command that timed out in its pool's silence."""

    __slots__ = ("_silence",)

    def __init__(self, silence: Silence) -> None:
        super().__init__(NoBackoff(), 0)
        self._silence = silence

    def __deepcopy__(self, memo: dict[int, Any]) -> NotingRetry:
        return self  # each connection deep-copies its retry: the copies must share the pool's silence

    async def call_with_retry(self, do: Callable[[], Awaitable[T]], fail: Callable[[RedisError], Any]) -> T:
        try:
            return await super().call_with_retry(do, fail)
        except TIMEOUTS as error:
            self._silence.noted(error)
            raise


def redis_client(settings: Settings, url: str | None = None) -> Redis:
    """A client of `url` (REDIS_URL by default) for commands and pub/sub."""
    return redis_of(Redis, settings, url)


def redis_of(kind: type[C], settings: Settings, url: str | None = None) -> C:
    """A client of class `kind` (Redis, or a subclass such as arq's ArqRedis for queues) whose connects and commands
    give up after `redis_timeout_seconds` with redis.exceptions.TimeoutError (a RedisError), and then fail at once
    for as long. Blocking reads must pass a timeout of their own (the broadcaster's `get_message(timeout=...)`
    does): a socket timeout would end an idle wait as a failure."""
    url = url or settings.redis_url
    if not url:
        raise RuntimeError("REDIS_URL is not set: run `newsagg up` (starts embedded Redis) or set REDIS_URL")
    seconds = settings.redis_timeout_seconds
    silence = Silence(seconds)
    pool = WatchfulPool.from_url(url, silence=silence, socket_timeout=seconds, socket_connect_timeout=seconds,
                                 retry=NotingRetry(silence))  # fmt: skip
    client = kind(connection_pool=pool)
    client.auto_close_connection_pool = True  # closing the client closes its pool, as Redis.from_url's does
    return client
