"""What retention deletes, given the settings and the time: one cutoff per kind of row (no I/O).

A setting of 0 keeps that kind forever. Articles go by when they were stored (`crawled_at`), not by their publication
date: an old item a feed still lists would otherwise be deleted and stored again every hour. An article of a story
that changed within the clustering window (and an hour, for the workers' copies to let the story go) waits: a live
story never loses articles or its representative to retention. Emptied and merged stories wait as long, since a
worker still holding one could write it back; those a pass empties are deleted by the next pass (service.py). The
clustering vocabulary forgets a term few articles had (`vocabulary_rare_documents`) and none for long; the row that
counts the articles stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from app.ingest.events import ARTICLES_ADDED
from app.search.sync import SEARCH_TOPIC
from app.settings import Settings
from app.stories.clustering import ClusteringPolicy
from app.stories.updates import STORY_UPDATED_TOPIC
from app.stories.velocity import BREAKING_TOPIC

# A story unchanged this long has left every worker's clustering copy (app/stories/store.py)
SETTLING = ClusteringPolicy().window + timedelta(hours=1)
KINDS = ("articles", "stories", "read_events", "sessions", "fetch_log", "fetch_archive", "vocabulary", "outbox")


@dataclass(frozen=True, slots=True)
class Cutoffs:
    """Rows older than each cutoff are due; None keeps that kind forever."""

    articles: datetime | None  # articles stored before this...
    settled: datetime  # ...whose story (if any) last changed before this
    stories: datetime | None  # stories with no article, or merged away, unchanged since before this
    read_events: datetime | None
    sessions: datetime | None  # sessions that expired or were signed out before this
    fetch_log: datetime | None
    fetch_archive: datetime | None  # archived bodies (app/archive/); they also go with their fetch log row
    vocabulary: datetime | None  # rare clustering terms no article has had since before this
    outbox: dict[str, datetime] = field(default_factory=dict)  # delivered events of each topic written before this


DAY, HOUR = 86400.0, 3600.0


def _before(now: datetime, kept_s: float) -> datetime | None:
    """`kept_s` seconds before `now`; None (kept forever) for 0, and for longer than the calendar reaches back (a
    million days written for "forever" keeps everything rather than failing every pass)."""
    if kept_s <= 0:
        return None
    try:
        return now - timedelta(seconds=kept_s)
    except OverflowError:
        return None


def outbox_retention(settings: Settings) -> dict[str, float]:
    """Seconds delivered events of each outbox topic are kept: breaking news for `breakingEvents(after:)`, story
    updates and new articles for an API process's catch-up, search events for looking into a sync."""
    return {BREAKING_TOPIC: settings.breaking_events_retention_days * DAY,
            STORY_UPDATED_TOPIC: settings.story_updates_retention_hours * HOUR,
            ARTICLES_ADDED: settings.articles_added_retention_hours * HOUR,
            SEARCH_TOPIC: settings.search_events_retention_hours * HOUR}  # fmt: skip


def cutoffs(settings: Settings, now: datetime) -> Cutoffs:
    settled = now - SETTLING
    stories = _before(now, settings.stories_retention_days * DAY)
    outbox = {topic: before for topic, kept_s in outbox_retention(settings).items()
              if (before := _before(now, kept_s)) is not None}  # fmt: skip
    return Cutoffs(
        articles=_before(now, settings.articles_retention_days * DAY),
        settled=settled,
        stories=min(stories, settled) if stories is not None else None,
        read_events=_before(now, settings.read_events_retention_days * DAY),
        sessions=_before(now, settings.sessions_retention_days * DAY),
        fetch_log=_before(now, settings.fetch_log_retention_days * DAY),
        fetch_archive=_before(now, settings.fetch_archive_retention_days * DAY),
        vocabulary=_before(now, settings.vocabulary_retention_days * DAY),
        outbox=outbox,
    )
