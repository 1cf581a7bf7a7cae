"""Entities for the edge: an article's, a story's (over its articles) and what is trending, each in one query."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from app.db.engine import Executor
from app.entities import repository
from app.entities.trending import BASELINE_WINDOWS, EntityTrend
from app.trending.windows import TrendingWindow


async def trending_entities(
    db: Executor, window: TrendingWindow, *, now: datetime, languages: Sequence[str], topics: Sequence[str], limit: int
) -> list[EntityTrend]:
    span = window.span
    found = await repository.trending(db, now=now, start=now - span, since=now - span * (1 + BASELINE_WINDOWS),
                                      baseline_windows=BASELINE_WINDOWS, languages=languages, topics=topics,
                                      limit=limit)  # fmt: skip
    return [EntityTrend.of(mentions, score, span) for mentions, score in found]
