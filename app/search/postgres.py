"""Full-text search on PostgreSQL: the default backend, and the one every other falls back to.

The database keeps each article's search vector (migration 0010): title weight A, summary B, in the article's
language (stemmed, accents folded) and unstemmed, CJK text as character bigrams. A query is parsed by
`websearch_to_tsquery` (quotes, `-`, `or`) unstemmed and in each language it names (English when it names none), the
forms joined by OR, so "elections" finds "election" in an English article and any article's exact words match
whatever its language. Hits are ranked by `ts_rank_cd` blended with freshness, highlighted by `ts_headline`, and
optionally one per story (its best article, with how many of the story's articles matched).

A short query that matches nothing is searched again by trigram similarity on titles (pg_trgm), so "ukriane" finds
Ukraine; those hits are flagged approximate.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.search.query import (
    FRESHNESS_HALF_LIFE_HOURS,
    FRESHNESS_WEIGHT,
    MARK_END,
    MARK_START,
    MAX_LANGUAGES,
    RANK_WEIGHT,
    SUMMARY_WORDS,
    SearchHit,
    SearchQuery,
    SearchRejected,
    SearchResult,
    checked,
    highlighted,
)

DEFAULT_LANGUAGE = "en"  # the stemmed form a query gets when it names no language (most of the corpus)
TYPO_MAX_WORDS = 3  # queries this short, without operators, get the trigram pass when nothing matches exactly
TYPO_THRESHOLD = 0.3  # pg_trgm word similarity a title needs to be a candidate for a query with a typo
TYPO_SPREAD = 0.15  # and within this much of the best candidate's ("ukriane": Ukraine 0.375, not every "uk…" word)
_OPERATORS = re.compile(r'["()]|(^|\s)-\S|\sor\s', re.IGNORECASE)
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_WORD = re.compile(r"\w+")
_SIMILAR_WORD = 0.75  # a title word at least this close to a query word is marked in an approximate hit

# freshness is exp(-hours / half-life * ln 2), its exponent capped: PostgreSQL raises on exp() underflow, and an
# article years old is simply 0 fresh
_FRESHNESS = f"""exp(-least(greatest(CAST(extract(epoch FROM (:now - m.published_at)) AS float8), 0)
                    / 3600 / {FRESHNESS_HALF_LIFE_HOURS} * ln(2), 700))"""

_RANKED = """
    WITH {prelude}
    matched AS (
        SELECT a.id, a.cluster_id, a.published_at, {text_score} AS text_score
        FROM articles a {with_query}
        WHERE {match} {filters}
    ),
    scored AS (
        SELECT m.*, {rank_weight} * m.text_score + {fresh_weight} * {freshness} AS score, {best} AS best
        FROM matched m
    ),
    grouped AS (
        SELECT s.*, row_number() OVER (PARTITION BY coalesce(s.cluster_id, -s.id) ORDER BY s.score DESC, s.id DESC)
                    AS place,
               count(*) OVER (PARTITION BY coalesce(s.cluster_id, -s.id)) AS matches
        FROM scored s WHERE {close_enough}
    ),
    page AS (
        SELECT * FROM grouped WHERE {grouping}
        ORDER BY {inner_order}
        LIMIT :limit OFFSET :offset
    )
    SELECT page.id, page.cluster_id, page.score, page.matches, a.title, a.summary, {highlights}
    FROM page JOIN articles a ON a.id = page.id {with_query}
    ORDER BY {outer_order}
"""

# a hit is highlighted in its own language when the query was parsed in it too, else unstemmed
_HEADLINE_CONFIG = """CASE WHEN newsagg_ts_config(a.language) = ANY(q.configs) THEN newsagg_ts_config(a.language)
                           ELSE 'newsagg_simple'::regconfig END"""
_HEADLINES = f"""
    ts_headline({_HEADLINE_CONFIG}, a.title, q.query, :marks || ', HighlightAll=true') AS title_highlight,
    ts_headline({_HEADLINE_CONFIG}, a.summary, q.query,
                :marks || ', MaxFragments=2, MaxWords={SUMMARY_WORDS}, MinWords=10') AS summary_highlight
"""
_MARKS = f'StartSel="{MARK_START}", StopSel="{MARK_END}", FragmentDelimiter=" … "'


class PostgresSearch:
    """The SearchBackend on the articles table."""

    name = "postgres"

    def __init__(self, sessions: Callable[[], AbstractAsyncContextManager[AsyncSession]]) -> None:
        self._sessions = sessions

    async def search(self, query: SearchQuery, *, now: datetime, limit: int, offset: int) -> SearchResult:
        words = checked(query.text)
        async with self._sessions() as db:
            if not query.approximate:
                hits = await _exact(db, query, words, now=now, limit=limit, offset=offset)
                if hits or offset or not _typo_tolerant(words):
                    if not hits and not offset and not await _has_words(db, words):
                        raise SearchRejected("the query has no searchable word")
                    return SearchResult(hits, approximate=False, backend=self.name)
            hits = await _similar(db, query, words, now=now, limit=limit, offset=offset)
            return SearchResult(hits, approximate=True, backend=self.name)


def _typo_tolerant(words: str) -> bool:
    return len(words.split()) <= TYPO_MAX_WORDS and not _OPERATORS.search(words) and not _CJK.search(words)


def _forms(query: SearchQuery) -> tuple[str, str, dict[str, Any]]:
    """The tsquery (unstemmed OR each language's stemmed form) and the configurations it was parsed with."""
    languages = sorted(set(query.languages))[:MAX_LANGUAGES] or [DEFAULT_LANGUAGE]
    params: dict[str, Any] = {f"language{n}": language for n, language in enumerate(languages)}
    configs = ["'newsagg_simple'::regconfig", *(f"newsagg_ts_config(:language{n})" for n in range(len(languages)))]
    tsquery = " || ".join(f"websearch_to_tsquery({config}, newsagg_search_text(:query))" for config in configs)
    return tsquery, f"ARRAY[{', '.join(configs)}]", params


def _filters(query: SearchQuery) -> tuple[str, dict[str, Any]]:
    filters, params = [], {}
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
    return " ".join(filters), params


def _statement(
    query: SearchQuery,
    *,
    text_score: str,
    match: str,
    filters: str,
    prelude: str = "",
    with_query: str = "",
    highlights: str = "NULL AS title_highlight, NULL AS summary_highlight",
    best: str = "0",
    close_enough: str = "true",
) -> str:
    inner = "published_at DESC, id DESC" if query.newest_first else "score DESC, id DESC"
    return _RANKED.format(
        prelude=prelude, text_score=text_score, best=best, close_enough=close_enough, match=match, filters=filters,
        with_query=with_query, highlights=highlights, rank_weight=RANK_WEIGHT, fresh_weight=FRESHNESS_WEIGHT,
        freshness=_FRESHNESS,
        grouping="place = 1" if query.by_story else "true", inner_order=inner,
        outer_order=", ".join(f"page.{part}" for part in inner.split(", ")),
    )  # fmt: skip


async def _exact(db: AsyncSession, query: SearchQuery, words: str, *, now: datetime, limit: int,
                 offset: int) -> list[SearchHit]:  # fmt: skip
    tsquery, configs, params = _forms(query)
    filters, filter_params = _filters(query)
    sql = _statement(
        query, prelude=f"q AS (SELECT {tsquery} AS query, {configs} AS configs),", with_query=", q",
        text_score="ts_rank_cd(a.search_vector, q.query, 32)", match="a.search_vector @@ q.query", filters=filters,
        highlights=_HEADLINES,
    )  # fmt: skip
    rows = await db.execute(text(sql), {**params, **filter_params, "query": words, "now": now, "limit": limit,
                                        "offset": offset, "marks": _MARKS})  # fmt: skip
    return [SearchHit(r.id, r.cluster_id, float(r.score), highlighted(r.title_highlight),
                      highlighted(r.summary_highlight), int(r.matches)) for r in rows]  # fmt: skip


async def _has_words(db: AsyncSession, words: str) -> bool:
    """Whether the query has any searchable word (asked only when nothing matched: one round trip otherwise)."""
    found = await db.scalar(text("SELECT numnode(websearch_to_tsquery('newsagg_simple', newsagg_search_text(:query)))"),
                            {"query": words})  # fmt: skip
    return bool(found)


async def _similar(db: AsyncSession, query: SearchQuery, words: str, *, now: datetime, limit: int,
                   offset: int) -> list[SearchHit]:  # fmt: skip
    """The typo-tolerant pass: titles containing a stretch similar to the query (pg_trgm word similarity, served by
    the title trigram index) about as well as the best one does, ranked by that similarity blended with freshness."""
    filters, filter_params = _filters(query)
    sql = _statement(
        query, text_score="word_similarity(:needle, newsagg_unaccent(lower(a.title)))", filters=filters,
        match="newsagg_unaccent(lower(a.title)) %> :needle", best="max(m.text_score) OVER ()",
        close_enough=f"s.text_score >= s.best - {TYPO_SPREAD}",
    )  # fmt: skip
    needle = (await db.execute(text("SELECT set_config('pg_trgm.word_similarity_threshold', :threshold, true), "
                                    "newsagg_unaccent(lower(:words))"),
                               {"threshold": str(TYPO_THRESHOLD), "words": words})).one()[1]  # fmt: skip
    rows = await db.execute(text(sql), {**filter_params, "needle": needle, "now": now, "limit": limit,
                                        "offset": offset})  # fmt: skip
    typed = [w.lower() for w in _WORD.findall(str(needle))]
    return [SearchHit(r.id, r.cluster_id, float(r.score), _mark_similar(r.title, typed),
                      highlighted(_extract(r.summary)), int(r.matches)) for r in rows]  # fmt: skip


def _mark_similar(title: str, typed: list[str]) -> str:
    """The title with each word close to a typed word marked (what the trigram pass matched)."""

    def mark(word: re.Match[str]) -> str:
        folded = word.group().lower()
        close = any(difflib.SequenceMatcher(None, folded, t).ratio() >= _SIMILAR_WORD for t in typed)
        return f"{MARK_START}{word.group()}{MARK_END}" if close else word.group()

    return highlighted(_WORD.sub(mark, title))


def _extract(summary: str) -> str:
    words = summary.split()
    return " ".join(words[:SUMMARY_WORDS]) + (" …" if len(words) > SUMMARY_WORDS else "")
