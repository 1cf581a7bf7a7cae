"""Full-text search on PostgreSQL: the articles' weighted tsvector (title A, summary B) under its GIN index,
`websearch_to_tsquery` (quotes, `-`, `or`), `ts_rank_cd` blended with freshness, `ts_headline` highlights, and
optionally one hit per story (its best article, with how many of the story's articles matched)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text

from app.db.engine import Executor

MAX_QUERY_CHARS = 200
MAX_QUERY_WORDS = 20
RANK_WEIGHT, FRESHNESS_WEIGHT = 0.7, 0.3
FRESHNESS_HALF_LIFE_HOURS = 48.0
HIGHLIGHT = "StartSel=<mark>, StopSel=</mark>"
# freshness is exp(-hours / half-life * ln 2), its exponent capped: PostgreSQL raises on exp() underflow, and an
# article years old is simply 0 fresh


class SearchRejected(ValueError):
    """A query that cannot be searched: empty, too long, or without a searchable word."""


@dataclass(frozen=True, slots=True)
class SearchQuery:
    text: str
    topics: tuple[str, ...] = ()
    source_ids: tuple[int, ...] = ()
    languages: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    by_story: bool = False
    newest_first: bool = False


@dataclass(frozen=True, slots=True)
class SearchHit:
    article_id: int
    story_id: int | None
    score: float
    title_highlight: str
    summary_highlight: str
    matches_in_story: int


def checked(query: str) -> str:
    """The query as searched; SearchRejected when it is empty or over the bounds."""
    cleaned = " ".join(query.split())
    if not cleaned:
        raise SearchRejected("the query is empty")
    if len(cleaned) > MAX_QUERY_CHARS or len(cleaned.split()) > MAX_QUERY_WORDS:
        raise SearchRejected(f"a query has at most {MAX_QUERY_CHARS} characters and {MAX_QUERY_WORDS} words")
    return cleaned


_SEARCH = """
    WITH q AS (SELECT websearch_to_tsquery('simple', :query) AS query),
    matched AS (
        SELECT a.id, a.cluster_id, a.published_at,
               {rank_weight} * ts_rank_cd(a.search_vector, q.query, 32)
               + {fresh_weight} * exp(-least(greatest(CAST(extract(epoch FROM (:now - a.published_at)) AS float8), 0)
                                            / 3600 / {half_life} * ln(2), 700)) AS score
        FROM articles a, q
        WHERE a.search_vector @@ q.query {filters}
    ),
    grouped AS (
        SELECT m.*, row_number() OVER (PARTITION BY coalesce(m.cluster_id, -m.id) ORDER BY m.score DESC, m.id DESC)
                    AS place,
               count(*) OVER (PARTITION BY coalesce(m.cluster_id, -m.id)) AS matches
        FROM matched m
    ),
    page AS (
        SELECT * FROM grouped WHERE {grouping}
        ORDER BY {inner_order}
        LIMIT :limit OFFSET :offset
    )
    SELECT page.id, page.cluster_id, page.score, page.published_at, page.matches,
           ts_headline('simple', a.title, q.query, :highlight || ', HighlightAll=true') AS title_highlight,
           ts_headline('simple', a.summary, q.query, :highlight || ', MaxFragments=2, MaxWords=30, MinWords=10')
               AS summary_highlight
    FROM page JOIN articles a ON a.id = page.id, q
    ORDER BY {outer_order}
"""


async def search(db: Executor, query: SearchQuery, *, now: datetime, limit: int, offset: int) -> list[SearchHit]:
    """Hits best first (or newest first), `limit` of them after skipping `offset`."""
    words = checked(query.text)
    filters, params = [], {"query": words, "now": now, "limit": limit, "offset": offset, "highlight": HIGHLIGHT}
    conditions: list[tuple[str, str, Any]] = [
        ("AND a.topics && CAST(:topics AS varchar[])", "topics", list(query.topics)),
        ("AND a.source_id = ANY(CAST(:sources AS bigint[]))", "sources", list(query.source_ids)),
        ("AND a.language = ANY(CAST(:languages AS varchar[]))", "languages", list(query.languages)),
        ("AND a.published_at >= :since", "since", query.since),
        ("AND a.published_at < :until", "until", query.until),
    ]
    for clause, name, value in conditions:
        if value:
            filters.append(clause)
            params[name] = value
    inner = "published_at DESC, id DESC" if query.newest_first else "score DESC, id DESC"
    sql = _SEARCH.format(
        filters=" ".join(filters), grouping="place = 1" if query.by_story else "true", inner_order=inner,
        outer_order=", ".join(f"page.{part}" for part in inner.split(", ")), rank_weight=RANK_WEIGHT,
        fresh_weight=FRESHNESS_WEIGHT, half_life=FRESHNESS_HALF_LIFE_HOURS,
    )  # fmt: skip
    hits = [SearchHit(r.id, r.cluster_id, float(r.score), r.title_highlight, r.summary_highlight, int(r.matches))
            for r in await db.execute(text(sql), params)]  # fmt: skip
    if not hits and not await db.scalar(text("SELECT numnode(websearch_to_tsquery('simple', :query))"),
                                        {"query": words}):  # fmt: skip
        raise SearchRejected("the query has no searchable word")  # asked only when nothing matched: one round trip
    return hits
