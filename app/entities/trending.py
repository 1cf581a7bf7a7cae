"""What is being talked about now: entities ranked by how much faster they are named in the window than in the
baseline before it (the same idea as trending stories: recent arrivals count, a steady hum does not). The score is
computed, filtered and ordered by PostgreSQL (`repository.trending`); this is what it means."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from app.entities.repository import Mentions

BASELINE_WINDOWS = 4  # the baseline is this many windows long, just before the window


@dataclass(frozen=True, slots=True)
class EntityTrend:
    mentions: Mentions
    velocity: float  # articles naming it per hour, in the window
    score: float  # articles in the window beyond what the baseline's rate predicts: recent - before / BASELINE_WINDOWS

    @classmethod
    def of(cls, mentions: Mentions, score: float, window: timedelta) -> EntityTrend:
        return cls(mentions, mentions.recent / (window.total_seconds() / 3600), score)
