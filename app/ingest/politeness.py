"""Politeness per host: robots.txt obeyed (and cached), Crawl-delay honoured, one shared request rate.

The rate is a token bucket in Redis, updated atomically by a Lua script on Redis's own clock, so every worker on
every machine shares it. A caller that finds the bucket empty is given a reserved slot in the future rather than a
refusal: n jobs for one host wait 0, 1/rate, 2/rate, ... seconds instead of all retrying at once.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from protego import Protego
from redis.asyncio import Redis

from app.ingest.fetch import FetchError, FetchPolicy, fetch_feed
from app.settings import Settings

log = logging.getLogger(__name__)
ROBOTS_AGENT = "newsagg"
ROBOTS_ERROR_TTL_S = 600  # an unreachable robots.txt is retried after 10 minutes
_ALLOW_ALL, _DISALLOW_ALL = "", "User-agent: *\nDisallow: /\n"

# KEYS[1] bucket; ARGV rate (tokens/s), burst. Returns the seconds until the reserved token (as a string: Redis
# truncates Lua numbers to integers).
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + (now - at) * rate) - 1
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
local wait = 0
if tokens < 0 then wait = -tokens / rate end
redis.call('EXPIRE', KEYS[1], math.ceil(wait + burst / rate) + 60)
return tostring(wait)
"""


@dataclass(frozen=True, slots=True)
class Admission:
    allowed: bool
    wait_s: float = 0.0
    reason: str | None = None


def host_key(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.lower()}"


class Politeness:
    def __init__(self, redis: Redis, http: httpx.AsyncClient, settings: Settings) -> None:
        self._redis = redis
        self._http = http
        self._settings = settings
        self._reserve = redis.register_script(_RESERVE)
        self._fetching: dict[str, asyncio.Task[str]] = {}  # one robots.txt fetch per host at a time in this worker

    async def admit(self, url: str) -> Admission:
        """May `url` be fetched, and after how long: robots.txt first, then the host's rate."""
        robots = await self.robots(host_key(url))
        if not robots.can_fetch(url, ROBOTS_AGENT):
            return Admission(False, reason="disallowed by robots.txt")
        rate = self._settings.politeness_requests_per_second
        delay = robots.crawl_delay(ROBOTS_AGENT)
        if delay:
            rate = min(rate, 1.0 / float(delay))
        return Admission(True, wait_s=await self.reserve(host_key(url), rate))

    async def reserve(self, host: str, rate: float) -> float:
        wait = await self._reserve(keys=[f"newsagg:bucket:{host}"], args=[rate, self._settings.politeness_burst])
        return float(wait)

    async def robots(self, host: str) -> Protego:
        key = f"newsagg:robots:{host}"
        cached = await self._redis.get(key)
        if cached is not None:
            return Protego.parse(cached.decode())
        # Jobs for one host that start together (a worker runs many) share one fetch rather than each asking the
        # publisher for its robots.txt
        task = self._fetching.get(host)
        if task is None:
            task = self._fetching[host] = asyncio.create_task(self._fetch_and_cache(key, host))
            task.add_done_callback(lambda _: self._fetching.pop(host, None))
        return Protego.parse(await asyncio.shield(task))

    async def _fetch_and_cache(self, key: str, host: str) -> str:
        text, ttl = await self._fetch_robots(host)
        await self._redis.set(key, text, ex=ttl)
        return text

    async def _fetch_robots(self, host: str) -> tuple[str, int]:
        """RFC 9309: 4xx = no rules; 5xx or unreachable = disallow all, retried soon."""
        ttl = int(self._settings.robots_cache_hours * 3600)
        try:
            fetched = await fetch_feed(
                self._http, f"{host}/robots.txt", FetchPolicy(self._settings.robots_max_bytes, 5)
            )
        except FetchError as error:
            if error.status_code is not None and 400 <= error.status_code < 500:
                return _ALLOW_ALL, ttl
            if error.error_class == "too_large":
                return _ALLOW_ALL, ttl
            log.warning("robots.txt of %s unavailable (%s): not fetching from it for now", host, error)
            return _DISALLOW_ALL, ROBOTS_ERROR_TTL_S
        return fetched.body.decode("utf-8", errors="replace"), ttl
