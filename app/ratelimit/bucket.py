"""Token buckets in Redis: capacity, refill per second, an atomic take of N tokens on Redis's own clock, and keys
that expire once their bucket would be full again (a missing key is a full bucket).

The limiter fails open: when Redis cannot answer in time, the request goes through unmetered and is counted, and
Redis is left alone for a moment so an outage does not add its timeout to every request.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from prometheus_client import Counter
from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

UNMETERED = Counter("newsagg_rate_limit_unmetered", "Requests let through without a charge: Redis could not be asked")
DOWN_FOR_S = 1.0  # after a failure, requests go unmetered this long before Redis is asked again

# KEYS[1] bucket; ARGV capacity, refill per second, cost, dry run ('1': look, take nothing). Returns allowed (1/0),
# then tokens left, seconds until full and seconds until `cost` tokens are there (-1: never, cost > capacity), as
# strings: Redis truncates Lua numbers to integers.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local capacity, rate, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
local allowed = 0
if cost <= tokens then
  allowed = 1
  if ARGV[4] ~= '1' then
    tokens = tokens - cost
    redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
    redis.call('EXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate) + 1)
  end
end
local wait = 0
if allowed == 0 then
  if cost > capacity then wait = -1 else wait = (cost - tokens) / rate end
end
return {allowed, tostring(tokens), tostring((capacity - tokens) / rate), tostring(wait)}
"""


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    capacity: int
    cost: int
    remaining: int  # whole tokens left after this take
    reset_at: datetime  # when the bucket is full again
    retry_after_s: float | None  # refused: until `cost` tokens are there (None: never, the cost exceeds the capacity)

    @property
    def used(self) -> int:
        return self.capacity - self.remaining


class TokenBuckets:
    def __init__(self, redis: Redis, timeout_s: float) -> None:
        self._take = redis.register_script(_TAKE)  # EVALSHA, loading the script again if Redis lost it
        self._timeout_s = timeout_s
        self._down_until = 0.0

    async def take(self, key: str, capacity: int, per_second: float, cost: int, *, dry_run: bool = False
                   ) -> Verdict | None:  # fmt: skip
        """Takes `cost` tokens from bucket `key` if it holds them (`dry_run`: only says whether it would). None when
        Redis could not be asked: the caller lets the request through."""
        if time.monotonic() < self._down_until:
            UNMETERED.inc()
            return None
        try:
            async with asyncio.timeout(self._timeout_s):
                raw = await self._take(keys=[key], args=[capacity, per_second, cost, 1 if dry_run else 0])
        except (RedisError, OSError, TimeoutError) as error:
            self._down_until = time.monotonic() + DOWN_FOR_S
            UNMETERED.inc()
            log.warning("rate limits unmetered for %.0f s: Redis did not answer (%r)", DOWN_FOR_S, error)
            return None
        allowed, tokens, full_in, wait = int(raw[0]), float(raw[1]), float(raw[2]), float(raw[3])
        reset_at = datetime.now(UTC) + timedelta(seconds=full_in)
        return Verdict(bool(allowed), capacity, cost, math.floor(tokens), reset_at, None if wait < 0 else wait)
