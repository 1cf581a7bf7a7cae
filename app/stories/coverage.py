"""Full coverage of a story: its articles grouped by outlet, near-duplicate copies folded under their original."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from app.articles.models import Article
from app.sources.models import Source
from app.stories import repository
from app.stories.repository import CoverageGroupRow, CoverageRequest, GroupKey


@dataclass(frozen=True, slots=True)
class CoverageItem:
    """An article as the story lists it, with the articles that copy it (syndicated or re-posted), earliest first."""

    article: Article
    copies: list[Article] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CoverageGroup:
    source_id: int
    key: GroupKey
    items: list[CoverageItem]  # earliest first


@dataclass(frozen=True, slots=True)
class CoveragePage:
    groups: list[CoverageGroup]
    has_next: bool
    total: int  # groups in the whole story


async def coverage_pages(
    session: AsyncSession, requests: Sequence[CoverageRequest]
) -> tuple[list[CoveragePage], list[Source]]:
    """One page per request, and the sources of every article on them; two statements whatever the number of
    requests."""
    rows = await repository.coverage_groups(session, requests)
    shown = _shown(requests, rows)
    wanted = {(requests[number].story_id, source_id) for number, source_id, _ in shown}
    found = await repository.coverage_articles(session, wanted) if wanted else []
    pages = _fold(requests, rows, shown, [(article, original_id) for article, _, original_id in found])
    return pages, list({source.id: source for _, source, _ in found}.values())


def _fold(requests: Sequence[CoverageRequest], rows: Sequence[CoverageGroupRow],
         shown: Sequence[tuple[int, int, GroupKey]],
         articles: Sequence[tuple[Article, int | None]]) -> list[CoveragePage]:  # fmt: skip
    """Pages from the groups' rows, the groups `_shown` of them, and their articles, earliest first, each with the
    original it copies (if any)."""
    copies: dict[int, list[Article]] = defaultdict(list)
    items: dict[tuple[int | None, int], list[CoverageItem]] = defaultdict(list)
    for article, original_id in articles:
        if original_id is None:
            items[article.cluster_id, article.source_id].append(CoverageItem(article, copies[article.id]))
        else:
            copies[original_id].append(article)  # the original's item holds this very list, before or after
    groups: dict[int, list[CoverageGroup]] = defaultdict(list)
    for number, source_id, key in shown:
        groups[number].append(CoverageGroup(source_id, key, items[requests[number].story_id, source_id]))
    listed = Counter(row.request for row in rows if row.source_id is not None)
    totals = {row.request: row.total for row in rows}
    return [CoveragePage(groups[number], has_next=listed[number] > request.size, total=totals[number])
            for number, request in enumerate(requests)]  # fmt: skip


def _shown(requests: Sequence[CoverageRequest], rows: Sequence[CoverageGroupRow]) -> list[tuple[int, int, GroupKey]]:
    """(request, source, key) of the groups on each page, leaving out the extra row that says another page follows."""
    counted: Counter[int] = Counter()
    shown = []
    for row in rows:
        if row.source_id is not None and counted[row.request] < requests[row.request].size:
            counted[row.request] += 1
            shown.append((row.request, row.source_id, (row.authority, row.earliest, row.source_id)))
    return shown
