"""Feeds: a reader's ranking, computed once (single flight) and kept as a snapshot (app/feed/snapshots.py) that
every page of a walk reads. A feed with a region (asked for, or the reader's home region) weighs locality
(app/feed/ranking.py). A first page looks for the reader's current ranking, cached `feed_cache_seconds` and
keyed by their feed version (app/feed/versions.py); a cursor names its snapshot and position and is good only in
the scope (reader, languages, topic) it came from.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from app.feed import repository, snapshots, versions
from app.feed.ranking import COLD_HOME_REGION, HOME_REGION, REGION_FEED, Candidate, Profile, rank
from app.feed.repository import Locality
from app.places.service import region_stories
from app.services import Services
from app.trending.store import scores as trending_scores
from app.trending.windows import TrendingWindow
from app.users.interests import interests
from app.users.models import SourceFollow, SourceMute, User
from app.users.preferences import source_ids_of

TRENDING_WINDOW = TrendingWindow.HOUR
READ_MEMORY = timedelta(days=7)  # an article opened longer ago than this no longer lowers its story


@dataclass(frozen=True, slots=True)
class FeedScope:
    """Who a feed is for and what it is narrowed to; a snapshot is only read within its own scope."""

    user_id: int | None
    languages: tuple[str, ...] = ()
    topic: str | None = None
    region: str | None = None  # ISO 3166-1 alpha-2: the region's stories first (`feed(region:)`)

    @property
    def key(self) -> str:
        region = f"|{self.region}" if self.region else ""  # scopes without one keep the keys they had
        return f"{self.user_id or 0}|{','.join(self.languages)}|{self.topic or ''}{region}"


async def current(
    services: Services, scope: FeedScope, now: datetime, version: int | None = None
) -> snapshots.Snapshot:
    """The ranking a first page shows: cached, or computed once however many ask at the same moment. `version` is
    the reader's feed version when the caller has read it already (a public scope, such as a topic feed, is the
    same for every reader and always version 0)."""
    if version is None or scope.user_id is None:
        version = await versions.read(services.redis, scope.user_id)

    async def compute() -> str:
        ranked = await build(services, scope, now)
        await snapshots.store(services.redis, ranked, _snapshot_lifetime(services))
        return ranked.id

    if version < 0:  # Redis is down: rank afresh, uncached
        return await snapshot(services, await compute())
    key = f"feed:{version}:{scope.key}"

    async def ranked() -> snapshots.Snapshot:
        return await snapshot(services, await services.cache.get_or_compute(key, services.settings.feed_cache_seconds,
                                                                            compute))  # fmt: skip

    try:
        return await ranked()
    except snapshots.SnapshotMissing:  # evicted from Redis before its pointer expired: rank again
        await services.cache.delete(key)
        return await ranked()


async def snapshot(services: Services, snapshot_id: str) -> snapshots.Snapshot:
    """The snapshot a cursor names; SnapshotMissing once it has expired."""
    return await snapshots.load(services.redis, snapshot_id, _snapshot_lifetime(services))


def _snapshot_lifetime(services: Services) -> timedelta:
    return timedelta(minutes=services.settings.feed_snapshot_minutes)


async def build(services: Services, scope: FeedScope, now: datetime) -> snapshots.Snapshot:
    settings = services.settings
    async with services.db() as session:
        profile, muted, languages, home = await _reader(session, scope, now)
        since = now - timedelta(hours=settings.feed_window_hours)
        locality = await _locality(session, scope.region or home, since, _locality_weight(scope, profile))
        profile = dataclasses.replace(profile, locality_weight=locality.weight)
        found = await repository.candidates(
            session, now=now, since=since, limit=settings.feed_candidates, languages=languages, topic=scope.topic,
            muted=muted, interests=[t for t, w in profile.interests.items() if w > 0], locality=locality,
        )  # fmt: skip
        found, articles = await _stand_ins(session, found, muted)
    trending = await _trending(services, now)
    ranked = rank(found, profile, trending, now)
    items = [snapshots.Item(r.story_id, articles.get(r.story_id), r.signals) for r in ranked]
    return snapshots.Snapshot(uuid.uuid4().hex, scope.key, now, items)


def _locality_weight(scope: FeedScope, profile: Profile) -> float:
    """A region asked for leads the feed; a reader's home region lifts local stories, and leads a cold start."""
    if scope.region:
        return REGION_FEED
    return COLD_HOME_REGION if profile.cold else HOME_REGION


async def _locality(session: AsyncSession, region: str | None, since: datetime, weight: float) -> Locality:
    if region is None:
        return Locality()
    stories, sources = await region_stories(session, region, since)
    return Locality(stories, sources, weight)


async def _reader(
    session: AsyncSession, scope: FeedScope, now: datetime
) -> tuple[Profile, list[int], list[str], str | None]:
    """The reader's profile, muted sources, languages (an explicit filter wins over their preferences) and home
    region."""
    if scope.user_id is None:
        return Profile(), [], list(scope.languages), None
    user = await session.get(User, scope.user_id)
    preferred = list(user.preferred_languages) if user else []
    profile = Profile(
        interests=await interests(session, scope.user_id, now),
        followed_sources=frozenset(await source_ids_of(session, scope.user_id, SourceFollow)),
        read_stories=frozenset(await repository.read_stories(session, scope.user_id, now - READ_MEMORY)),
    )
    muted = await source_ids_of(session, scope.user_id, SourceMute)
    return profile, muted, list(scope.languages) or preferred, user.home_region if user else None


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
            c = dataclasses.replace(c, lead_source_id=source_id, authority=authority)
        out.append(c)
    return out, articles


async def _trending(services: Services, now: datetime) -> dict[int, float]:
    """Raw trending scores by story (empty while Redis is down: `scores` logs it)."""
    return dict(await trending_scores(services.redis, TRENDING_WINDOW.span, now))
