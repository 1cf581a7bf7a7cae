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
    """An article as the story lists it, with the first of the articles that copy it (syndicated or re-posted),
    earliest first, and how many copy it in all."""

    article: Article
    copies: list[Article] = field(default_factory=list)
    copy_count: int = 0


@dataclass(frozen=True, slots=True)
class CoverageGroup:
    source_id: int
    key: GroupKey
    items: list[CoverageItem]  # earliest first, the first the request asked for
    article_count: int  # the outlet's articles in the story, copies of others not counted


@dataclass(frozen=True, slots=True)
class CoveragePage:
    groups: list[CoverageGroup]
    has_next: bool
    total: int  # groups in the whole story


async def coverage_pages(
    session: AsyncSession, requests: Sequence[CoverageRequest]
) -> tuple[list[CoveragePage], list[Source]]:
    """One page per request, and the sources of every article on them; two statements whatever the number of
    requests (one when no request asks for articles). What comes back is bounded by what was asked: a group's first
    `articles`, an article's first `copies`, however many the story holds."""
    rows = await repository.coverage_groups(session, requests)
    shown = _shown(requests, rows)
    sizes: dict[tuple[int, int], tuple[int, int]] = {}
    for row in shown:  # a group on several pages is read once, at the largest sizes asked
        request, key = requests[row.request], (requests[row.request].story_id, row.source_id or 0)
        articles, copies = sizes.get(key, (0, 0))
        sizes[key] = (max(articles, request.articles), max(copies, request.copies))
    wanted = {key: size for key, size in sizes.items() if size[0] > 0}
    found = await repository.coverage_articles(session, wanted) if wanted else []
    pages = _fold(requests, rows, shown, [(article, original_id, count) for article, _, original_id, count in found])
    return pages, list({source.id: source for _, source, _, _ in found}.values())


def _fold(requests: Sequence[CoverageRequest], rows: Sequence[CoverageGroupRow], shown: Sequence[CoverageGroupRow],
          articles: Sequence[tuple[Article, int | None, int]]) -> list[CoveragePage]:  # fmt: skip
    """Pages from the groups' rows, the groups `_shown` of them, and their articles, earliest first, each with the
    original it copies (if any) and its own copies' count."""
    copies: dict[int, list[Article]] = defaultdict(list)
    originals: dict[tuple[int | None, int], list[tuple[Article, int]]] = defaultdict(list)
    for article, original_id, copy_count in articles:
        if original_id is None:
            originals[article.cluster_id, article.source_id].append((article, copy_count))
        else:
            copies[original_id].append(article)
    groups: dict[int, list[CoverageGroup]] = defaultdict(list)
    for row in shown:
        request, source_id = requests[row.request], row.source_id or 0
        items = [CoverageItem(article, copies[article.id][: request.copies], count)
                 for article, count in originals[request.story_id, source_id][: request.articles]]  # fmt: skip
        key = (row.authority, row.earliest, source_id)
        groups[row.request].append(CoverageGroup(source_id, key, items, row.article_count))
    listed = Counter(row.request for row in rows if row.source_id is not None)
    totals = {row.request: row.total for row in rows}
    return [CoveragePage(groups[number], has_next=listed[number] > request.size, total=totals[number])
            for number, request in enumerate(requests)]  # fmt: skip


def _shown(requests: Sequence[CoverageRequest], rows: Sequence[CoverageGroupRow]) -> list[CoverageGroupRow]:
    """The rows of the groups on each page, leaving out the extra row that says another page follows."""
    counted: Counter[int] = Counter()
    shown = []
    for row in rows:
        if row.source_id is not None and counted[row.request] < requests[row.request].size:
            counted[row.request] += 1
            shown.append(row)
    return shown
