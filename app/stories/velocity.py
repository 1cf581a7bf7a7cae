"""Velocity and breaking news (DESIGN §4): a story's velocity is the articles that joined it in the last 30 minutes,
per minute; it is breaking while that is above 2 per minute from at least 5 distinct sources. The first transition
to breaking writes one outbox event per story (deduplicated by key), in the same transaction as the articles that
caused it; the push side delivers it (Redis pub/sub, GraphQL subscriptions)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

WINDOW = timedelta(minutes=30)
BREAKING_PER_MINUTE = 2.0  # more than this many articles a minute ...
BREAKING_SOURCES = 5  # ... from at least this many outlets
BREAKING_TOPIC = "story.breaking"

_UPDATE = text("""
    WITH recent AS (
        SELECT s.id, count(a.id) AS articles, count(DISTINCT a.source_id) AS sources, s.is_breaking AS was_breaking
        FROM story_clusters AS s
        LEFT JOIN articles AS a ON a.cluster_id = s.id AND a.crawled_at >= now() - CAST(:window AS interval)
        WHERE s.id = ANY(CAST(:stories AS bigint[]))
        GROUP BY s.id),
    measured AS (
        SELECT id, articles / CAST(:minutes AS float8) AS velocity, sources, was_breaking,
               articles / CAST(:minutes AS float8) > CAST(:per_minute AS float8)
               AND sources >= CAST(:min_sources AS int) AS breaking
        FROM recent),
    updated AS (
        UPDATE story_clusters AS s
        SET velocity = m.velocity, is_breaking = m.breaking,
            breaking_started_at = CASE WHEN m.breaking AND NOT m.was_breaking THEN now() ELSE s.breaking_started_at END
        FROM measured AS m WHERE s.id = m.id
        RETURNING s.id, s.title, s.article_count, s.source_count, s.topics, s.languages, m.velocity, m.sources,
                  m.breaking AND NOT m.was_breaking AS became_breaking)
    INSERT INTO outbox (topic, dedupe_key, payload)
    SELECT CAST(:topic AS varchar), CAST(:topic AS text) || ':' || id,
           jsonb_build_object('story_id', id, 'title', title, 'article_count', article_count,
                              'source_count', source_count, 'topics', topics, 'languages', languages,
                              'velocity', velocity, 'sources_in_window', sources, 'at', now())
    FROM updated WHERE became_breaking
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING (payload ->> 'story_id')::bigint
""")


async def update_velocity(connection: AsyncConnection, story_ids: Sequence[int]) -> list[int]:
    """Velocity of the given stories, now; returns the stories that just became breaking (for the first time)."""
    if not story_ids:
        return []
    rows = await connection.execute(_UPDATE, {
        "stories": list(story_ids), "window": WINDOW, "minutes": WINDOW.total_seconds() / 60,
        "per_minute": BREAKING_PER_MINUTE, "min_sources": BREAKING_SOURCES, "topic": BREAKING_TOPIC,
    })  # fmt: skip
    return [int(row[0]) for row in rows]


async def breaking_stories(connection: AsyncConnection) -> list[int]:
    rows = await connection.execute(text("SELECT id FROM story_clusters WHERE is_breaking"))
    return [int(row[0]) for row in rows]
