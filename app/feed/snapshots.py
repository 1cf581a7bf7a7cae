"""Rankings kept as snapshots: each feed walk reads all its pages from one, so no story repeats or goes missing
while news arrives. A snapshot lives `feed_snapshot_minutes` in Redis; each process also keeps the ones it has
parsed, which never change."""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.feed.ranking import FreshnessClass, Signals

log = logging.getLogger(__name__)

SNAPSHOT_PREFIX = "newsagg:feed:snapshot:"


class SnapshotMissing(LookupError):
    """The snapshot has expired (or never existed)."""


@dataclass(frozen=True, slots=True)
class Item:
    story_id: int
    article_id: int | None  # the article on the card (a stand-in when the story's own lead source is muted)
    signals: Signals


@dataclass(frozen=True, slots=True)
class Snapshot:
    id: str
    scope: str
    ranked_at: datetime
    items: list[Item]

    def dumps(self) -> str:
        return json.dumps({"id": self.id, "scope": self.scope, "at": self.ranked_at.isoformat(),
                           "items": [[i.story_id, i.article_id, *_compact(i.signals)] for i in self.items]},
                          separators=(",", ":"))  # fmt: skip

    @classmethod
    def loads(cls, raw: str) -> Snapshot:
        data = json.loads(raw)
        items = []
        for story_id, article_id, *signals in data["items"]:
            fields = list(signals)
            fields[2] = FreshnessClass(fields[2])
            items.append(Item(story_id, article_id, Signals(*fields)))
        return cls(data["id"], data["scope"], datetime.fromisoformat(data["at"]), items)


def _compact(s: Signals) -> tuple[object, ...]:
    """The signals in field order, to 4 decimals (dataclasses.astuple deep-copies: 20x slower)."""
    return (
        round(s.relevance, 4),
        round(s.freshness, 4),
        s.freshness_class.value,
        round(s.quality, 4),
        round(s.trending, 4),
        round(s.diversity, 4),
        s.breaking_boost,
        s.read_penalty,
        round(s.score, 4),
        round(s.locality, 4),
    )


async def store(redis: Redis, ranked: Snapshot, lifetime: timedelta) -> None:
    remember(ranked)
    try:
        await redis.set(SNAPSHOT_PREFIX + ranked.id, ranked.dumps(), ex=max(int(lifetime.total_seconds()), 1))
    except (RedisError, OSError) as error:
        log.warning("feed: snapshot not stored, its cursors will not resolve: %s", error)


# Snapshots never change once ranked, so each process keeps the latest it has parsed (a 500-story ranking is ~40 KB
# of JSON: parsing it on every page would cost more than serving the page).
_PARSED: OrderedDict[str, Snapshot] = OrderedDict()
PARSED_SNAPSHOTS = 256


def remember(ranked: Snapshot) -> None:
    _PARSED[ranked.id] = ranked
    _PARSED.move_to_end(ranked.id)
    while len(_PARSED) > PARSED_SNAPSHOTS:
        _PARSED.popitem(last=False)


def forget_snapshots() -> None:
    """Drops this process's parsed snapshots (they are re-read from Redis, where they expire)."""
    _PARSED.clear()


async def load(redis: Redis, snapshot_id: str, lifetime: timedelta) -> Snapshot:
    known = _PARSED.get(snapshot_id)
    if known is not None and datetime.now(UTC) - known.ranked_at < lifetime:
        return known
    try:
        raw = await redis.get(SNAPSHOT_PREFIX + snapshot_id)
    except (RedisError, OSError) as error:
        raise SnapshotMissing(snapshot_id) from error
    if raw is None:
        raise SnapshotMissing(snapshot_id)
    found = Snapshot.loads(raw.decode() if isinstance(raw, bytes) else raw)
    remember(found)
    return found
