"""Politeness per site: robots.txt obeyed (and cached), Crawl-delay honoured, one shared request rate, one back-off
after a 429/503 and a cap on concurrent requests for each site.

A site is a registrable domain (app/ingest/sites.py): feeds.example.co.uk and www.example.co.uk are one site to
the crawler. robots.txt stays per origin, as RFC 9309 scopes it. All the state is in Redis, updated atomically by Lua
scripts on Redis's own clock, so every worker on every machine shares it:
- the rate is a token bucket. A caller that finds it empty is given a reserved slot in the future rather than a
  refusal: n jobs for one site wait 0, 1/rate, 2/rate, ... seconds instead of all retrying at once. A back-off moves
  the bucket's clock to its end, so every reservation waits at least that long, then they are spaced as usual;
- the concurrent requests are leases in a sorted set (scored by their expiry): a worker that dies holding one
  loses it after the lease, never for good.

Without Redis, politeness fails closed: no request goes out that could not take its site's slot and rate (the job
is deferred and retried, jobs/loop.py), since workers that cannot see each other's counts could together exceed any
site's limits. (The queues are in Redis too: nothing is fetched then anyway.) A lease taken before Redis went away
cannot be returned while it is away: it is left to expire after `politeness_slot_lease_seconds` (a restarted Redis
has lost it already), and the fetch it covered keeps its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

import httpx
from protego import Protego
from redis.asyncio import Redis

from app.ingest.fetch import NETWORK_FAILURES, FetchError, FetchPolicy, fetch_feed
from app.ingest.sites import site_of
from app.observability.work import count_fetch_failure
from app.resilience.leases import CountedLeases
from app.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
ROBOTS_AGENT = "newsagg"
ROBOTS_ERROR_TTL_S = 600  # an unreachable robots.txt is retried after 10 minutes
ROBOTS_REDIRECTS = 5  # RFC 9309 asks for at least five, whatever NEWSAGG_FETCH_MAX_REDIRECTS allows a feed
_ALLOW_ALL = ""
_UNREACHABLE = "\x00"  # a cached robots.txt that starts with it is a failure: "\x00<error class>\n<message>"

# KEYS[1] bucket; ARGV rate (tokens/s), burst, back-off (s), longest wait (s; negative: any). With no back-off:
# returns {reserved, seconds until the token is due} (the seconds as a string: Redis truncates Lua numbers to
# integers), the token reserved unless it is due later than the longest wait (the bucket then left as it was). With
# one: the bucket's clock moves to the back-off's end (its tokens refill from then on), and "0" is returned.
_BUCKET = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate, burst, back_off = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
if back_off > 0 then
  if at < now then tokens, at = math.min(burst, tokens + (now - at) * rate), now end
  tokens, at = math.min(tokens, 1), math.max(at, now + back_off)
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
  redis.call('EXPIRE', KEYS[1], math.ceil(at - now + burst / rate) + 60)
  return '0'
end
tokens = math.min(burst, tokens + (now - at) * rate) - 1
local wait = 0
if tokens < 0 then wait = -tokens / rate end
local longest = tonumber(ARGV[4])
if longest >= 0 and wait > longest then return {0, tostring(wait)} end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(wait + burst / rate) + 60)
return {1, tostring(wait)}
"""


@dataclass(frozen=True, slots=True)
class Admission:
    allowed: bool
    wait_s: float = 0.0
    reason: str | None = None
    error_class: str | None = None  # why not: robots_disallowed, or how fetching robots.txt failed (dns, tls, ...)
    reserved: bool = True  # False: the site's turn is further off than the caller could wait, and was not taken


def host_key(url: str) -> str:
    """The origin a robots.txt speaks for."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.lower()}"


class Politeness:
    def __init__(self, redis: Redis, http: httpx.AsyncClient, settings: Settings) -> None:
        self._redis = redis
        self._http = http
        self._settings = settings
        self._bucket = redis.register_script(_BUCKET)
        self._slots = CountedLeases(redis, "politeness")
        self._fetching: dict[str, asyncio.Task[str]] = {}  # one robots.txt fetch per origin at a time in this worker

    async def admit(self, url: str, *, longest_wait_s: float | None = None) -> Admission:
        """May `url` be fetched, and after how long: robots.txt first, then the site's rate (and back-off). A turn
        due later than `longest_wait_s` is not reserved (`reserved` False): a caller that cannot wait so long must
        not hold up the site's other requests with a turn it would never use."""
        text = await self._robots_text(host_key(url))
        if text.startswith(_UNREACHABLE):
            error_class, _, message = text[1:].partition("\n")
            return Admission(False, reason=f"robots.txt unavailable: {message}", error_class=error_class)
        robots = Protego.parse(text)
        if not robots.can_fetch(url, ROBOTS_AGENT):
            return Admission(False, reason="disallowed by robots.txt", error_class="robots_disallowed")
        rate = self._settings.politeness_requests_per_second
        delay = robots.crawl_delay(ROBOTS_AGENT)
        if delay:
            rate = min(rate, 1.0 / float(delay))
        wait, reserved = await self._reserve(url, rate, longest_wait_s)
        return Admission(True, wait_s=wait, reserved=reserved)

    async def reserve(self, url: str, rate: float) -> float:
        """Seconds until the request this reserves may go to `url`'s site."""
        wait, _ = await self._reserve(url, rate, None)
        return wait

    async def _reserve(self, url: str, rate: float, longest_wait_s: float | None) -> tuple[float, bool]:
        """(seconds until the site's next turn, whether it was reserved: not when due later than `longest_wait_s`)."""
        longest = -1.0 if longest_wait_s is None else max(longest_wait_s, 0.0)
        reserved, wait = await self._bucket(
            keys=[_bucket_key(url)], args=[rate, self._settings.politeness_burst, 0, longest]
        )
        return float(wait), bool(reserved)

    async def back_off(self, url: str, seconds: float | None) -> None:
        """The site answered 429/503: no request goes to it for `seconds` (its Retry-After; the default back-off
        when it gave none), from any worker, for any of its hosts."""
        seconds = min(seconds or self._settings.politeness_back_off_seconds, self._settings.crawl_hint_max_hours * 3600)
        rate = self._settings.politeness_requests_per_second
        await self._bucket(
            keys=[_bucket_key(url)], args=[rate, self._settings.politeness_burst, max(seconds, 0.001), -1]
        )
        log.info("site %s backs off for %.0f s", site_of(url), seconds)

    def slot(self, url: str) -> contextlib.AbstractAsyncContextManager[bool]:
        """One of the site's concurrent requests (`politeness_concurrent_per_site`), held for the block; False when
        all are taken. A lease that its worker never returns (or cannot, Redis away) expires after
        `politeness_slot_lease_seconds`, and the fetch it covered keeps its result."""
        settings = self._settings
        return self._slots.held(f"newsagg:slots:{site_of(url)}", settings.politeness_concurrent_per_site,
                                settings.politeness_slot_lease_seconds)  # fmt: skip

    async def fetch_within_site(self, url: str, fetch: Callable[[], Awaitable[T]]) -> T | None:
        """`fetch()` within one of the site's concurrent requests, None when they are all taken; a 429/503 it raises
        (a FetchError) holds the whole site back, its feeds and pages alike, before it goes on to the caller."""
        try:
            async with self.slot(url) as held:
                return await fetch() if held else None
        except FetchError as error:
            if error.throttled:
                await self.back_off(url, error.retry_after_s)
            raise

    async def robots(self, host: str) -> Protego:
        """The rules of `host` (an origin); an unreachable robots.txt reads as disallow-all (RFC 9309)."""
        text = await self._robots_text(host)
        return Protego.parse("User-agent: *\nDisallow: /\n" if text.startswith(_UNREACHABLE) else text)

    async def _robots_text(self, host: str) -> str:
        key = f"newsagg:robots:{host}"
        cached = await self._redis.get(key)
        if cached is not None:
            return str(cached.decode())
        # Jobs for one origin that start together (a worker runs many) share one fetch rather than each asking the
        # publisher for its robots.txt
        task = self._fetching.get(host)
        if task is None:
            task = self._fetching[host] = asyncio.create_task(self._fetch_and_cache(key, host))
            task.add_done_callback(lambda _: self._fetching.pop(host, None))
        return await asyncio.shield(task)

    async def _fetch_and_cache(self, key: str, host: str) -> str:
        cached = await self._redis.get(key)  # a fetch that ended after the caller's own look found it missing
        if cached is not None:
            return str(cached.decode())
        text, ttl = await self._fetch_robots(host)
        await self._redis.set(key, text, ex=ttl)
        return text

    async def _fetch_robots(self, host: str) -> tuple[str, int]:
        """RFC 9309: 4xx = no rules; 5xx or unreachable = disallow all, retried soon. A failure is kept as such
        (its class and message), so it is never reported as a disallowing robots.txt."""
        ttl = int(self._settings.robots_cache_hours * 3600)
        policy = FetchPolicy.from_settings(self._settings, max_body_bytes=self._settings.robots_max_bytes,
                                           max_redirects=ROBOTS_REDIRECTS)  # fmt: skip
        try:
            fetched = await fetch_feed(self._http, f"{host}/robots.txt", policy)
        except FetchError as error:
            if error.status_code is not None and 400 <= error.status_code < 500:
                return _ALLOW_ALL, ttl
            if error.error_class == "too_large":
                return _ALLOW_ALL, ttl
            error_class = error.error_class if error.error_class in NETWORK_FAILURES else "robots_unavailable"
            count_fetch_failure("robots", error_class)
            log.warning("robots.txt of %s unavailable (%s: %s): not fetching from it for now", host, error_class, error)
            return f"{_UNREACHABLE}{error_class}\n{error}", ROBOTS_ERROR_TTL_S
        return fetched.body.decode("utf-8-sig", errors="replace"), ttl  # a byte order mark would hide the first line


def _bucket_key(url: str) -> str:
    return f"newsagg:bucket:{site_of(url)}"
