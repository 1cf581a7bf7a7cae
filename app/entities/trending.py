"""What is being talked about now, pure: entities ranked by how much faster they are named in the window than in
the baseline before it (the same idea as trending stories: recent arrivals count, a steady hum does not)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from app.entities.repository import Mentions

BASELINE_WINDOWS = 4  # the baseline is this many windows long, just before the window


@dataclass(frozen=True, slots=True)
class EntityTrend:
    mentions: Mentions
    velocity: float  # articles naming it per hour, in the window
    score: float  # articles in the window beyond what the baseline's rate predicts


def ranked(found: list[Mentions], window: timedelta, limit: int) -> list[EntityTrend]:
    """Those named faster in the window than before it, highest score first; ties by more articles in the window, then
    by key (a stable order). A name heard as often as usual, or less, is not trending, however often that is."""
    hours = window.total_seconds() / 3600
    trends = [
        EntityTrend(m, m.recent / hours, m.recent - m.before / BASELINE_WINDOWS) for m in found
    ]  # fmt: skip
    trends = [t for t in trends if t.score > 0]
    trends.sort(key=lambda t: (-t.score, -t.mentions.recent, t.mentions.entity.key))
    return trends[:limit]
