"""Share-link state in Redis: code -> destination (a cache of PostgreSQL), and click counters waiting for the flush.

One script per visit does it all in one round trip: read (or fill) the code's destination and count the visit.
A click counts once per visitor, link and UTC day (a marker that expires); a preview counts every time but without
its referrer (unfurlers rarely send one, and a made-up one would only add rows). Counters are fields of one hash,
`PENDING`: link|article|story|day|host|kind -> count; the flush renames it and writes it to PostgreSQL.
Losing Redis loses at most the clicks of one flush interval, and the cache refills from PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

PREFIX = "newsagg:share:"
PENDING = PREFIX + "pending"
FLUSHING = PREFIX + "flushing"
FLUSHING_ID = PREFIX + "flushing:id"
FLUSHING_REFUSALS = PREFIX + "flushing:refusals"
REFUSED = PREFIX + "refused:"  # + batch id: a batch PostgreSQL kept refusing, kept for an operator to look at
SET_ASIDE_SECONDS = 30 * 86400
CLICK, PREVIEW = "c", "p"
MARKER_SECONDS = 26 * 3600  # a UTC day, and the clock skew between processes

# KEYS: the code's cache entry, PENDING, the visitor's marker. ARGV: a destination to store ('' to read it), its
# lifetime, kind (c/p), "day|host" of the visit, the marker's lifetime. Returns the destination, or nil (not cached).
_VISIT = """
local value = ARGV[1]
if value == '' then
  value = redis.call('GET', KEYS[1])
  if not value then return false end
else
  redis.call('SET', KEYS[1], value, 'EX', ARGV[2])
end
local link, article, story, url = string.match(value, '^(%d+) (%d+) (%d+) ?(.*)$')
if link == nil or link == '0' or url == '' then return value end
local field = link .. '|' .. article .. '|' .. story .. '|' .. ARGV[4] .. '|' .. ARGV[3]
if ARGV[3] == 'p' or redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[5]) then
  redis.call('HINCRBY', KEYS[2], field, 1)
end
return value
"""

# Moves PENDING aside under a new batch id, unless a batch is still there from a flush that did not finish.
_TAKE = """
local current = redis.call('GET', KEYS[3])
if current and redis.call('EXISTS', KEYS[2]) == 1 then return current end
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('SET', KEYS[3], ARGV[1])
return ARGV[1]
"""


@dataclass(frozen=True, slots=True)
class Cached:
    """A code's destination as cached: link 0 is a code we never issued (or whose link was deleted); no url, gone."""

    link_id: int
    article_id: int
    story_id: int
    url: str

    def encode(self) -> str:
        return f"{self.link_id} {self.article_id} {self.story_id} {self.url}"

    @classmethod
    def decode(cls, raw: bytes | str) -> Cached:
        text = raw.decode() if isinstance(raw, bytes) else raw
        link, article, story, url = [*text.split(" ", 3), ""][:4]
        return cls(int(link), int(article), int(story), url)


class ShareCounters:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._visit = redis.register_script(_VISIT)
        self._take = redis.register_script(_TAKE)

    async def visit(self, code: str, fill: Cached | None, ttl_s: int, kind: str, day: str, host: str,
                    visitor: str) -> Cached | None:  # fmt: skip
        """The code's cached destination (None: not cached), the visit counted; `fill` stores one first."""
        keys = [PREFIX + "link:" + code, PENDING, f"{PREFIX}seen:{day}:{code}:{visitor}"]
        host = "" if kind == PREVIEW else host
        args: list[str | int] = [fill.encode() if fill else "", ttl_s, kind, f"{day}|{host}", MARKER_SECONDS]
        raw = await self._visit(keys=keys, args=args)
        return None if raw is None else Cached.decode(raw)

    async def forget(self, codes: list[str]) -> None:
        if codes:
            await self.redis.delete(*(PREFIX + "link:" + code for code in codes))

    async def take_batch(self, new_id: str) -> tuple[str, dict[str, int]] | None:
        """(batch id, field -> count) to write, or None when nothing is pending."""
        batch = await self._take(keys=[PENDING, FLUSHING, FLUSHING_ID], args=[new_id])
        if batch is None:
            return None
        fields: dict[bytes, bytes] = await self.redis.hgetall(FLUSHING)  # type: ignore[misc]
        return batch.decode(), {key.decode(): int(value) for key, value in fields.items()}

    async def done(self) -> None:
        await self.redis.delete(FLUSHING, FLUSHING_ID, FLUSHING_REFUSALS)

    async def refused(self) -> int:
        """Counts one more refusal of the batch being flushed; how many so far."""
        return int(await self.redis.incr(FLUSHING_REFUSALS))

    async def set_aside(self, batch_id: str) -> None:
        """The batch out of the flush's way, under its id for 30 days, so the clicks after it are written."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.rename(FLUSHING, REFUSED + batch_id)
            pipe.expire(REFUSED + batch_id, SET_ASIDE_SECONDS)
            pipe.delete(FLUSHING_ID, FLUSHING_REFUSALS)
            await pipe.execute()
