"""Perspectives in full coverage (pure): a story's outlets grouped by where they are and what kind they are, so a
reader sees who covered it from where (wire services, national, local and international outlets, by country)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from app.places.repository import OutletGroupRow


@dataclass(frozen=True, slots=True)
class OutletGroup:
    country: str | None  # None: nobody knows where the outlet is
    kind: str  # wire, national, local, international, unknown
    source_ids: list[int]
    articles: int


@dataclass(frozen=True, slots=True)
class StoryPerspectives:
    groups: list[OutletGroup]  # by country and kind, most outlets first
    by_country: list[OutletGroup]  # kind "" (every kind)
    by_kind: list[OutletGroup]  # country None (every country)


def perspectives_of(rows: Sequence[OutletGroupRow]) -> StoryPerspectives:
    """Groups by (country, kind), by country and by kind, each with its outlets and articles, the most outlets first
    (ties: more articles, then country code and kind); outlets of unknown country last among equals."""
    groups = [OutletGroup(r.country, r.kind, list(r.source_ids), r.articles) for r in rows]
    return StoryPerspectives(
        groups=_ordered(groups),
        by_country=_ordered(_merged(groups, lambda g: (g.country, ""))),
        by_kind=_ordered(_merged(groups, lambda g: (None, g.kind))),
    )


def perspectives_by_story(rows: Iterable[OutletGroupRow], story_ids: Sequence[int]) -> dict[int, StoryPerspectives]:
    """Each story's perspectives (none for a story without rows), the rows read once: a page of stories costs what
    its rows cost, not stories x rows."""
    grouped: dict[int, list[OutletGroupRow]] = {story_id: [] for story_id in story_ids}
    for row in rows:
        grouped[row.story_id].append(row)
    return {story_id: perspectives_of(found) for story_id, found in grouped.items()}


def _merged(groups: list[OutletGroup], key: Callable[[OutletGroup], tuple[str | None, str]]) -> list[OutletGroup]:
    sources: dict[tuple[str | None, str], set[int]] = defaultdict(set)
    articles: dict[tuple[str | None, str], int] = defaultdict(int)
    for group in groups:
        k = key(group)
        sources[k].update(group.source_ids)
        articles[k] += group.articles
    return [OutletGroup(country, kind, sorted(sources[country, kind]), articles[country, kind])
            for country, kind in sources]  # fmt: skip


def _ordered(groups: list[OutletGroup]) -> list[OutletGroup]:
    return sorted(groups, key=lambda g: (-len(g.source_ids), -g.articles, g.country is None, g.country or "", g.kind))
