"""Feeds as snapshots: a ranking is computed once, kept in Redis, and every page of it is read from there.

A first page looks for the reader's current ranking (cached `feed_cache_seconds`, keyed by the reader's feed
version, which any change of their interests bumps); on a miss one caller computes it (single flight) and stores it
as a snapshot that lives `feed_snapshot_minutes`. A cursor names its snapshot and position, so walking the pages
of a feed never repeats or skips a story however much news arrives meanwhile, and a cursor can only be used in the
scope (reader, languages, topic) it came from.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession

from app.feed import repository
from app.feed.ranking import Candidate, FreshnessClass, Profile, Signals, rank
from app.services import Services
from app.trending.store import scores as trending_scores
from app.users.interests import feed_version_key, interests
from app.users.models import SourceFollow, SourceMute, User

log = logging.getLogger(__name__)

SNAPSHOT_PREFIX = "newsagg:feed:snapshot:"
TRENDING_WINDOW = timedelta(hours=1)
READ_MEMORY = timedelta(days=7)  # an article opened longer ago than this no longer lowers its story


class SnapshotMissing(LookupError):
    """The snapshot a cursor names has expired (or never existed)."""


@dataclass(frozen=True, slots=True)
class FeedScope:
    """Who a feed is for and what it is narrowed to; a snapshot is only read within its own scope."""

    user_id: int | None
    languages: tuple[str, ...] = ()
    topic: str | None = None

    @property
    def key(self) -> str:
        return f"{self.user_id or 0}|{','.join(self.languages)}|{self.topic or ''}"


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
    )


async def feed_version(services: Services, user_id: int | None) -> int:
    if user_id is None:
        return 0
    try:
        value = await services.redis.get(feed_version_key(user_id))
    except (RedisError, OSError):
        return -1  # uncached rather than wrong: the cache layer logs and computes
    return int(value or 0)


async def bump_feed_version(services: Services, user_id: int) -> None:
    """The reader's cached rankings are stale (their interests, follows, mutes or languages changed)."""
    try:
        await services.redis.incr(feed_version_key(user_id))
    except (RedisError, OSError) as error:
        log.warning("feed: could not invalidate the cached feed of user %d: %s", user_id, error)


async def current(services: Services, scope: FeedScope, now: datetime) -> Snapshot:
    """The ranking a first page shows: cached, or computed once however many ask at the same moment."""
    version = await feed_version(services, scope.user_id)

    async def compute() -> str:
        ranked = await build(services, scope, now)
        _remember(ranked)
        try:
            ttl = int(services.settings.feed_snapshot_minutes * 60)
            await services.redis.set(SNAPSHOT_PREFIX + ranked.id, ranked.dumps(), ex=max(ttl, 1))
        except (RedisError, OSError) as error:
            log.warning("feed: snapshot not stored, its cursors will not resolve: %s", error)
        return ranked.id

    if version < 0:  # Redis is down: rank afresh, uncached
        return _PARSED[await compute()]
    key = f"feed:{version}:{scope.key}"
    return await snapshot(services, await services.cache.get_or_compute(key, services.settings.feed_cache_seconds,
                                                                        compute))  # fmt: skip


# Snapshots never change once ranked, so each process keeps the latest it has parsed (a 500-story ranking is ~40 KB
# of JSON: parsing it on every page would cost more than serving the page).
_PARSED: OrderedDict[str, Snapshot] = OrderedDict()
PARSED_SNAPSHOTS = 256


def _remember(ranked: Snapshot) -> None:
    _PARSED[ranked.id] = ranked
    _PARSED.move_to_end(ranked.id)
    while len(_PARSED) > PARSED_SNAPSHOTS:
        _PARSED.popitem(last=False)


def forget_snapshots() -> None:
    """Drops this process's parsed snapshots (they are re-read from Redis, where they expire)."""
    _PARSED.clear()


async def snapshot(services: Services, snapshot_id: str) -> Snapshot:
    known = _PARSED.get(snapshot_id)
    lifetime = timedelta(minutes=services.settings.feed_snapshot_minutes)
    if known is not None and datetime.now(UTC) - known.ranked_at < lifetime:
        return known
    try:
        raw = await services.redis.get(SNAPSHOT_PREFIX + snapshot_id)
    except (RedisError, OSError) as error:
        raise SnapshotMissing(snapshot_id) from error
    if raw is None:
        raise SnapshotMissing(snapshot_id)
    found = Snapshot.loads(raw.decode() if isinstance(raw, bytes) else raw)
    _remember(found)
    return found


async def build(services: Services, scope: FeedScope, now: datetime) -> Snapshot:
    settings = services.settings
    async with services.db() as session:
        profile, muted, languages = await _reader(session, scope, now)
        found = await repository.candidates(
            session, now=now, since=now - timedelta(hours=settings.feed_window_hours), limit=settings.feed_candidates,
            languages=languages, topic=scope.topic, muted=muted,
            interests=[t for t, w in profile.interests.items() if w > 0],
        )  # fmt: skip
        found, articles = await _stand_ins(session, found, muted)
    trending = await _trending(services, now)
    ranked = rank(found, profile, trending, now)
    items = [Item(r.story_id, articles.get(r.story_id), r.signals) for r in ranked]
    return Snapshot(uuid.uuid4().hex, scope.key, now, items)


async def _reader(session: AsyncSession, scope: FeedScope, now: datetime) -> tuple[Profile, list[int], list[str]]:
    """The reader's profile, muted sources and languages (an explicit filter wins over their preferences)."""
    if scope.user_id is None:
        return Profile(), [], list(scope.languages)
    user = await session.get(User, scope.user_id)
    preferred = list(user.preferred_languages) if user else []
    profile = Profile(
        interests=await interests(session, scope.user_id, now),
        followed_sources=frozenset(await repository.source_ids(session, scope.user_id, SourceFollow)),
        read_stories=frozenset(await repository.read_stories(session, scope.user_id, now - READ_MEMORY)),
    )
    muted = await repository.source_ids(session, scope.user_id, SourceMute)
    return profile, muted, list(scope.languages) or preferred


async def _stand_ins(session: AsyncSession, found: list[Candidate], muted: Sequence[int]
                     ) -> tuple[list[Candidate], dict[int, int]]:  # fmt: skip
    """Stories led by a muted source get their best article from a source not muted (and its authority)."""
    if not muted:
        return found, {}
    blocked = set(muted)
    led_by_muted = [c.story_id for c in found if c.lead_source_id in blocked]
    stand_ins = await repository.stand_in_leads(session, led_by_muted, muted)
    out, articles = [], {}
    for c in found:
        if c.lead_source_id in blocked:
            if c.story_id not in stand_ins:
                continue
            article_id, source_id, authority = stand_ins[c.story_id]
            articles[c.story_id] = article_id
            c = Candidate(c.story_id, c.title, c.topic_counts, c.source_ids, source_id, authority, c.source_count,
                          c.last_updated_at, c.is_breaking)  # fmt: skip
        out.append(c)
    return out, articles


async def _trending(services: Services, now: datetime) -> dict[int, float]:
    try:
        return dict(await trending_scores(services.redis, TRENDING_WINDOW, now))
    except (RedisError, OSError) as error:
        log.warning("feed: trending unavailable, ranking without it: %s", error)
        return {}
