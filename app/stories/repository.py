"""Every query on stories for reading: by id (merged ones resolve to where they went), newest, full coverage."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, column, func, select, text, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

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
    """A page of a story's coverage: `size` groups after the group at `after` (None: from the first), up to
    `articles` articles of each group (earliest first) and up to `copies` copies of each article (earliest first)."""

    story_id: int
    size: int
    articles: int
    copies: int
    after: GroupKey | None = None


@dataclass(frozen=True, slots=True)
class CoverageGroupRow:
    request: int  # index into the requests
    total: int  # groups in the whole story
    source_id: int | None  # None: the page is empty
    authority: float
    earliest: datetime
    article_count: int  # the group's articles, all of them


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
        SELECT a.cluster_id AS story_id, a.source_id, s.authority, min(a.published_at) AS earliest,
               count(*) AS article_count
        FROM articles a JOIN sources s ON s.id = a.source_id
        WHERE a.cluster_id IN (SELECT story_id FROM request) AND NOT EXISTS (
            SELECT FROM articles o
            WHERE o.id = a.duplicate_of_id AND o.cluster_id = a.cluster_id AND o.duplicate_of_id IS NULL)
        GROUP BY a.cluster_id, a.source_id, s.authority
    ),
    paged AS (
        SELECT r.number, g.source_id, g.authority, g.earliest, g.article_count,
               row_number() OVER (PARTITION BY r.number ORDER BY g.authority DESC, g.earliest, g.source_id) AS position
        FROM request r JOIN grouped g ON g.story_id = r.story_id
        WHERE r.after_source_id IS NULL OR g.authority < r.after_authority
           OR (g.authority = r.after_authority AND (g.earliest, g.source_id) > (r.after_earliest, r.after_source_id))
    )
    SELECT r.number, (SELECT count(*) FROM grouped g WHERE g.story_id = r.story_id) AS total,
           p.source_id, p.authority, p.earliest, p.article_count
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
    return [CoverageGroupRow(row.number - 1, row.total, row.source_id, row.authority, row.earliest,
                             row.article_count or 0) for row in rows]  # fmt: skip


# The articles shown in each (story, source) group: its first `articles` (copies of another article of the story left
# out, as in _COVERAGE_GROUPS), each with how many copies it has in the story and its first `copies` of them. A wire
# story re-run 10,000 times is one count and a few rows, not 10,000 rows.
_SHOWN_ARTICLES = text("""
    WITH wanted AS (
        SELECT * FROM unnest(CAST(:story_id AS bigint[]), CAST(:source_id AS bigint[]), CAST(:articles AS int[]),
                             CAST(:copies AS int[])) AS w(story_id, source_id, articles, copies)
    ),
    listed AS (
        SELECT a.id, a.cluster_id AS story_id, a.duplicate_of_id IS NULL AS original, w.articles, w.copies,
               row_number() OVER (PARTITION BY w.story_id, w.source_id ORDER BY a.published_at, a.id) AS position
        FROM wanted w JOIN articles a ON a.cluster_id = w.story_id AND a.source_id = w.source_id
        WHERE NOT EXISTS (
            SELECT FROM articles o
            WHERE o.id = a.duplicate_of_id AND o.cluster_id = a.cluster_id AND o.duplicate_of_id IS NULL)
    ),
    shown AS (SELECT * FROM listed WHERE position <= articles)
    SELECT s.id, CAST(NULL AS bigint) AS original_id,
           CASE WHEN s.original THEN (SELECT count(*) FROM articles c
                                      WHERE c.duplicate_of_id = s.id AND c.cluster_id = s.story_id)
                ELSE 0 END AS copy_count
    FROM shown s
    UNION ALL
    SELECT c.id, s.id, 0
    FROM shown s CROSS JOIN LATERAL (
        SELECT c.id FROM articles c WHERE c.duplicate_of_id = s.id AND c.cluster_id = s.story_id
        ORDER BY c.published_at, c.id LIMIT s.copies) c
    WHERE s.original
""").columns(column("id", BigInteger), column("original_id", BigInteger), column("copy_count", BigInteger))


async def coverage_articles(
    session: AsyncSession, groups: Mapping[tuple[int, int], tuple[int, int]]
) -> list[tuple[Article, Source, int | None, int]]:
    """The articles shown in these (story, source) groups, each group's first `articles` (from its (articles, copies)
    sizes) and up to `copies` copies of each, earliest first, with their sources. Each comes with the id of the
    original it copies when that original is in its story (the copy is then listed under the original, whichever
    group that is in), and an original with how many copies it has in the story."""
    keys = list(groups)
    shown = _SHOWN_ARTICLES.subquery("shown")
    rows = await session.execute(
        select(Article, Source, shown.c.original_id, shown.c.copy_count).join(shown, shown.c.id == Article.id)
        .join(Source, Source.id == Article.source_id).order_by(Article.published_at, Article.id),
        {"story_id": [story for story, _ in keys], "source_id": [source for _, source in keys],
         "articles": [groups[k][0] for k in keys], "copies": [groups[k][1] for k in keys]})  # fmt: skip
    return [(article, source, original_id, int(count)) for article, source, original_id, count in rows]


async def sources_of_stories(db: Executor, *, breaking: bool = False, ids: Collection[int] = ()) -> set[int]:
    """The outlets covering the live stories that are breaking now (`breaking`) or have the given ids."""
    condition = StoryCluster.is_breaking if breaking else StoryCluster.id.in_(sorted(ids))
    query = select(func.unnest(StoryCluster.source_ids)).where(condition, StoryCluster.merged_into_id.is_(None))
    return {int(source_id) for source_id in await db.scalars(query)}
