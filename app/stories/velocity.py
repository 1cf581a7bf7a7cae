"""Velocity and breaking news (DESIGN §4): a story's velocity is the articles that joined it in the last 30 minutes
(the window, `NEWSAGG_VELOCITY_WINDOW_SECONDS`), per minute; it is breaking while that is above 2 per minute from at
least 5 distinct sources. The first transition
to breaking writes one outbox event per story (deduplicated by key), in the same transaction as the articles that
caused it; the push side delivers it (Redis pub/sub, GraphQL subscriptions).

A story keeps its own recent arrivals (saved with it, so every worker's copy agrees), so measuring is arithmetic
on the story, not a query."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from app.stories.state import Story, story_topics

WINDOW = timedelta(minutes=30)
BREAKING_PER_MINUTE = 2.0  # more than this many articles a minute ...
BREAKING_SOURCES = 5  # ... from at least this many outlets
BREAKING_TOPIC = "story.breaking"


def measure(story: Story, now: datetime, window: timedelta = WINDOW) -> bool:
    """The story's velocity and breaking state as of `now`; True when it has just become breaking."""
    cutoff = (now - window).timestamp()
    story.recent = [arrival for arrival in story.recent if arrival[0] > cutoff]
    story.velocity = len(story.recent) / (window.total_seconds() / 60)
    breaking = story.velocity > BREAKING_PER_MINUTE and len({source for _, source in story.recent}) >= BREAKING_SOURCES
    became = breaking and not story.is_breaking
    story.is_breaking = breaking
    if became and story.breaking_started_at is None:
        story.breaking_started_at = now
    return became


def breaking_events(stories: Sequence[Story], now: datetime) -> dict[str, dict[str, Any]]:
    """One `story.breaking` outbox event per story, ever (by deduplication key: the story's), written with the save
    (app/stories/store.py)."""
    return {f"{BREAKING_TOPIC}:{s.id}": {
        "story_id": s.id, "title": s.representative.title, "article_count": s.size, "source_count": len(s.sources),
        "topics": story_topics(s), "languages": sorted(s.languages), "velocity": s.velocity,
        "sources_in_window": len({source for _, source in s.recent}), "at": now.isoformat(),
    } for s in stories}  # fmt: skip
