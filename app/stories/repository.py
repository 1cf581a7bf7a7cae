"""Every query on stories for reading: by id (merged ones resolve to where they went), newest, full coverage."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, text, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from app.articles.models import Article
from app.db.engine import Executor
from app.sources.models import Source
from app.stories.models import StoryCluster


async def stories_by_ids(db: Executor, ids: Sequence[int]) -> dict[int, StoryCluster]:
    """Requested id -> the story it is now (a merged story's id resolves to the one it was merged into)."""
    found: dict[int, StoryCluster] = {}
    pending = {i: i for i in ids}  # requested id -> id to look up
    for _ in range(10):  # merge chains are short; bounded anyway
        if not pending:
            break
        rows = {
            s.id: s for s in await db.scalars(select(StoryCluster).where(StoryCluster.id.in_(set(pending.values()))))
        }
        following = {}
        for requested, current in pending.items():
            story = rows.get(current)
            if story is None or story.article_count == 0:  # gone, or emptied (app/stories/repair.py)
                continue
            if story.merged_into_id is None:
                found[requested] = story
            else:
                following[requested] = story.merged_into_id
        pending = following
    return found


# the keys stories are listed by, newest first: each pairs with the id for keyset pages
BY_UPDATE = StoryCluster.last_updated_at
BY_APPEARANCE = StoryCluster.first_seen_at  # never changes: pages never shift
BY_BREAKING = func.coalesce(StoryCluster.breaking_started_at, StoryCluster.first_seen_at)


async def latest_stories(db: Executor, *, limit: int, after: tuple[datetime, int] | None,
                         topics: Sequence[str] = (), languages: Sequence[str] = (), by: Any = BY_UPDATE,
                         breaking_only: bool = False) -> list[StoryCluster]:  # fmt: skip
    """Live stories, newest first by `by` (most recently updated, by default); about any of `topics`, with an article
    in any of `languages`, breaking now if `breaking_only`."""
    query = (
        select(StoryCluster)
        .where(StoryCluster.merged_into_id.is_(None), StoryCluster.article_count > 0)  # 0: emptied (stories/repair)
        .order_by(by.desc(), StoryCluster.id.desc())
        .limit(limit)
    )
    if breaking_only:
        query = query.where(StoryCluster.is_breaking)
    if topics:
        query = query.where(StoryCluster.topics.overlap(list(topics)))
    if languages:
        query = query.where(StoryCluster.languages.overlap(list(languages)))
    if after is not None:
        query = query.where(tuple_(by, StoryCluster.id) < tuple_(*after))
    return list(await db.scalars(query))


async def latest_articles_of_stories(
    session: AsyncSession, story_ids: Sequence[int], *, limit: int
) -> list[tuple[Article, Source]]:
    """Up to `limit` articles of each story, newest first, with their sources; every story in one statement."""
    rank = func.row_number().over(partition_by=Article.cluster_id,
                                  order_by=(Article.published_at.desc(), Article.id.desc()))  # fmt: skip
    ranked = select(Article.id, rank.label("rank")).where(Article.cluster_id.in_(story_ids)).subquery()
    rows = await session.execute(
        select(Article, Source).join(ranked, ranked.c.id == Article.id).join(Source, Source.id == Article.source_id)
        .where(ranked.c.rank <= limit).order_by(Article.published_at.desc(), Article.id.desc()))  # fmt: skip
    return [(article, source) for article, source in rows]


GroupKey = tuple[float, datetime, int]
"""Where a coverage group stands in its story: its outlet's authority (desc), its earliest article, the outlet id."""


@dataclass(frozen=True, slots=True)
class CoverageRequest:
    """A page of a story's coverage: `size` groups after the group at `after` (None: from the first)."""

    story_id: int
    size: int
    after: GroupKey | None = None


@dataclass(frozen=True, slots=True)
class CoverageGroupRow:
    request: int  # index into the requests
    total: int  # groups in the whole story
    source_id: int | None  # None: the page is empty
    authority: float
    earliest: datetime


# A group is one outlet's articles in a story, leaving out copies of the story's other articles (they fold under
# their original, whatever its outlet). Every request's page (and one group more, to tell whether another page
# follows) in one statement, whatever the number of stories: requests are unnested into rows.
_COVERAGE_GROUPS = text("""
    WITH request AS (
        SELECT * FROM unnest(CAST(:story_id AS bigint[]), CAST(:size AS int[]), CAST(:after_authority AS float8[]),
                             CAST(:after_earliest AS timestamptz[]), CAST(:after_source_id AS bigint[]))
             WITH ORDINALITY AS r(story_id, size, after_authority, after_earliest, after_source_id, number)
    ),
    grouped AS (
        SELECT a.cluster_id AS story_id, a.source_id, s.authority, min(a.published_at) AS earliest
        FROM articles a JOIN sources s ON s.id = a.source_id
        WHERE a.cluster_id IN (SELECT story_id FROM request) AND NOT EXISTS (
            SELECT FROM articles o
            WHERE o.id = a.duplicate_of_id AND o.cluster_id = a.cluster_id AND o.duplicate_of_id IS NULL)
        GROUP BY a.cluster_id, a.source_id, s.authority
    ),
    paged AS (
        SELECT r.number, g.source_id, g.authority, g.earliest,
               row_number() OVER (PARTITION BY r.number ORDER BY g.authority DESC, g.earliest, g.source_id) AS position
        FROM request r JOIN grouped g ON g.story_id = r.story_id
        WHERE r.after_source_id IS NULL OR g.authority < r.after_authority
           OR (g.authority = r.after_authority AND (g.earliest, g.source_id) > (r.after_earliest, r.after_source_id))
    )
    SELECT r.number, (SELECT count(*) FROM grouped g WHERE g.story_id = r.story_id) AS total,
           p.source_id, p.authority, p.earliest
    FROM request r LEFT JOIN paged p ON p.number = r.number AND p.position <= r.size + 1
    ORDER BY r.number, p.position
""")


async def coverage_groups(db: Executor, requests: Sequence[CoverageRequest]) -> list[CoverageGroupRow]:
    """Each request's groups in order (up to size + 1), or one row with no source when its page is empty."""
    rows = await db.execute(_COVERAGE_GROUPS, {
        "story_id": [r.story_id for r in requests], "size": [r.size for r in requests],
        "after_authority": [r.after[0] if r.after else None for r in requests],
        "after_earliest": [r.after[1] if r.after else None for r in requests],
        "after_source_id": [r.after[2] if r.after else None for r in requests],
    })  # fmt: skip
    return [CoverageGroupRow(row.number - 1, row.total, row.source_id, row.authority, row.earliest) for row in rows]


async def coverage_articles(
    session: AsyncSession, groups: Collection[tuple[int, int]]
) -> list[tuple[Article, Source, int | None]]:
    """The articles of these (story, source) groups, earliest first, with their sources, each with the id of the
    original it copies when that original is in its story (the copy is then listed under the original, whichever
    group that is in)."""
    pairs = list(groups)
    original = aliased(Article)
    copies = and_(original.id == Article.duplicate_of_id, original.cluster_id == Article.cluster_id,
                  original.duplicate_of_id.is_(None))  # fmt: skip
    rows = await session.execute(
        select(Article, Source, original.id).join(Source, Source.id == Article.source_id)
        .outerjoin(original, copies)
        .where(Article.cluster_id.in_(list({story for story, _ in pairs})),
               or_(original.id.is_(None) & tuple_(Article.cluster_id, Article.source_id).in_(pairs),
                   tuple_(original.cluster_id, original.source_id).in_(pairs)))
        .order_by(Article.published_at, Article.id))  # fmt: skip
    return [(article, source, original_id) for article, source, original_id in rows]


async def sources_of_stories(db: Executor, *, breaking: bool = False, ids: Collection[int] = ()) -> set[int]:
    """The outlets covering the live stories that are breaking now (`breaking`) or have the given ids."""
    condition = StoryCluster.is_breaking if breaking else StoryCluster.id.in_(sorted(ids))
    query = select(func.unnest(StoryCluster.source_ids)).where(condition, StoryCluster.merged_into_id.is_(None))
    return {int(source_id) for source_id in await db.scalars(query)}
