"""How many WebSockets each client holds open across every API process: a Redis sorted set per client of its
connections, each with a lease the connection renews while it lives. A process that dies leaves leases that simply
run out, so a client is never locked out for longer than one lease."""

from __future__ import annotations

from redis.asyncio import Redis

KEY_PREFIX = "newsagg:ws:clients:"

# KEYS[1] the client's connections; ARGV: connection, most allowed (0: any number, a renewal), lease in ms.
# Redis's own clock: the API processes' clocks need not agree.
_LEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local limit = tonumber(ARGV[2])
if limit > 0 and not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""


class ConnectionLeases:
    def __init__(self, redis: Redis) -> None:
        self._lease = redis.register_script(_LEASE)
        self._redis = redis

    async def acquire(self, client: str, connection: str, limit: int, lease_s: float) -> bool:
        """True when the client had fewer than `limit` live connections and this one now counts among them.
        Redis errors propagate: the caller decides whether to admit uncounted."""
        return bool(await self._lease(keys=[KEY_PREFIX + client], args=[connection, limit, int(lease_s * 1000)]))

    async def renew(self, client: str, connection: str, lease_s: float) -> None:
        await self._lease(keys=[KEY_PREFIX + client], args=[connection, 0, int(lease_s * 1000)])

    async def release(self, client: str, connection: str) -> None:
        await self._redis.zrem(KEY_PREFIX + client, connection)

    async def count(self, client: str) -> int:
        return int(await self._redis.zcard(KEY_PREFIX + client))
