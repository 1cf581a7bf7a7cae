"""Counted leases in Redis: at most N holders of something at once (a site's concurrent fetches, the cluster's digest
runs), each lease a member of a sorted set scored by when it expires, so a holder that dies frees its place when its
lease runs out. Taken by one script (atomic), given back with ZREM of the lease id."""

from __future__ import annotations

# KEYS[1] the leases; ARGV cap, lease (s), lease id. 1 when the lease was taken, 0 when the cap is reached. Redis's own
# clock judges expiry, so the holders' clocks need not agree.
TAKE_LEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
return 1
"""
