"""Full-text search on PostgreSQL: the default backend, and the one every other falls back to.

The database keeps each article's search vector (migration 0010): title weight A, summary B, in the article's
language (stemmed, accents folded) and unstemmed, CJK text as character bigrams. The article's own text
(app/extraction) has a vector and an index of its own (migration 0027), searched as a second tier after the title
and summary's matches when they do not fill the page (app/search/body.py). A query is parsed by
`websearch_to_tsquery` (quotes, `-`, `or`) unstemmed and in each language it names (English when it names none), the
forms joined by OR, so "elections" finds "election" in an English article and any article's exact words match
whatever its language (each distinct form once). Topic, source and language filters are lexemes of the same vector
(migration 0011), so the index applies them with the words. The index is asked for the query loosened, phrases as
AND and exclusions dropped (app/search/tsquery.py), and the exact query is tested on the rows it finds, after their
dates: the index cannot check word positions anyway (every phrase is tested on the stored vectors), and it reads no
posting list for an excluded word. Hits are highlighted by `ts_headline`, and optionally one per story (its best
article, with how many of the story's articles matched).

Ranking: of the matches, the newest `candidates` (1,000 by default, found as app/search/windows.py reads them) are
ranked by `ts_rank_cd` blended with freshness, and pages walk them. That bounds the work for a word in every tenth
headline (PostgreSQL would otherwise rank tens of thousands of rows to show 20): news is searched for what is
recent, and an older article of such a word is reached by narrowing the search (`from`/`to`, topics, sources)
rather than by paging past a thousand hits. The pages of one search walk one set: its query names the newest
article of its first page (`newest_id`, set by app/search/service.py) and `now` is that page's moment. The body's
matches follow (newest first, up to `candidates` too), each with an extract of the body in place of the summary's.
A later page starts after the previous one's last hit (`SearchQuery.after`, app/search/query.py's
`SearchPosition` says why), not at an offset. An offset is still taken, for the page after one Meilisearch
answered; one past the title and summary's hits is an offset into the body's.

A short query (up to 3 words, no operators) that matches nothing has its unknown or rare words corrected from the
words of titles they could be typos of (app/search/terms.py: "ukriane" → "ukraine", but never "ukraine" → "maine")
and is searched again; its hits say so (`corrected`), and a correction that finds nothing either is not reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.search import terms, tsquery
from app.search.body import AFTER, body_hits, paging
from app.search.query import (
    BODY_TIER,
    MARK_END,
    MARK_START,
    POSTGRES,
    SUMMARY_WORDS,
    TITLE_TIER,
    SearchHit,
    SearchPosition,
    SearchQuery,
    SearchRejected,
    SearchResult,
    checked,
    highlighted,
)
from app.search.windows import SPARSE_ROWS, WALK_ROWS, Windows

RANK_WEIGHT, FRESHNESS_WEIGHT = 0.7, 0.3  # the score: text rank blended with freshness
FRESHNESS_HALF_LIFE_HOURS = 48.0
DEFAULT_LANGUAGE = "en"  # the stemmed form a query gets when it names no language (most of the corpus)
TYPO_MAX_WORDS = 3  # queries this short, without operators, are corrected when nothing matches them
_OPERATORS = re.compile(r'["()]|(^|\s)-\S|\sor\s', re.IGNORECASE)
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")

# freshness is exp(-hours / half-life * ln 2), its exponent capped: PostgreSQL raises on exp() underflow, and an
# article years old is simply 0 fresh
_FRESHNESS = f"""exp(-least(greatest(CAST(extract(epoch FROM (:now - m.published_at)) AS float8), 0)
                    / 3600 / {FRESHNESS_HALF_LIFE_HOURS} * ln(2), 700))"""

# The query is written into the first window's filter (and that of the older matches read at once), not read from
# the `q` CTE, and planned with its values: the planner then knows how common the words are and walks the date index
# backwards for a common one (stopping at `candidates`) or reads the few matches of a rare one. A generic plan
# (asyncpg's prepared statements get one after five runs) would guess 0.5% of rows for every query (the later
# windows want that guess: app/search/windows.py). work_mem keeps a common word's bitmap exact (not lossy). No
# parallel workers: a window whose one-time filter is false still started two (about 50 ms) before skipping its scan.
# random_page_cost 1.1 (not 4) prices heap pages as what they are for a hot table (cached, or on SSD): at 4, a rare
# word's few thousand matches were intersected with a month of the date index (450,000 entries, 25 ms) to save heap
# reads that cost 3 ms. No JIT: compiling costs more than any of these statements runs.
_PLANNING = text(
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('work_mem', '32MB', true), "
    "set_config('max_parallel_workers_per_gather', '0', true), set_config('random_page_cost', '1.1', true), "
    "set_config('jit', 'off', true)"
)

_FORMS = """SELECT CAST(websearch_to_tsquery(config, newsagg_search_text(:query)) AS text) AS form
              FROM unnest({configs}) WITH ORDINALITY AS c(config, n) ORDER BY n"""

_MATCHED = """
    WITH q AS (SELECT CAST(:exact AS tsquery) AS query, {configs} AS configs, {searched} AS searched),
    {matches}
    scored AS (
        SELECT m.id, m.cluster_id, m.published_at,
               {rank_weight} * ts_rank_cd(m.search_vector, q.query, 32) + {fresh_weight} * {freshness} AS score
        FROM candidates m, q
    ),
    grouped AS (
        SELECT s.*, row_number() OVER (PARTITION BY coalesce(s.cluster_id, -s.id) ORDER BY s.score DESC, s.id DESC)
                    AS place,
               count(*) OVER (PARTITION BY coalesce(s.cluster_id, -s.id)) AS matches
        FROM scored s
    )"""
# how many hits the title and summary have, when a page past their last one asks (the body's hits follow them)
_COUNTED = _MATCHED + "\n    SELECT count(*) FROM grouped WHERE {grouping}"
_RANKED = (
    _MATCHED
    + """,
    page AS (
        SELECT * FROM grouped WHERE {grouping} {after}
        ORDER BY {inner_order}
        LIMIT :limit OFFSET :offset
    )
    SELECT page.id, page.cluster_id, page.score, page.published_at, page.matches, {highlights}
    FROM page JOIN articles a ON a.id = page.id, q
    ORDER BY {outer_order}
"""
)

# a hit is highlighted in its own language when the query was parsed in it too, else unstemmed
_HEADLINE_CONFIG = """CASE WHEN newsagg_ts_config(a.language) = ANY(q.configs) THEN newsagg_ts_config(a.language)
                           ELSE 'newsagg_simple'::regconfig END"""
_HEADLINES = f"""
    ts_headline({_HEADLINE_CONFIG}, a.title, q.query, :marks || ', HighlightAll=true') AS title_highlight,
    ts_headline({_HEADLINE_CONFIG}, a.summary, q.query,
                :marks || ', MaxFragments=2, MaxWords={SUMMARY_WORDS}, MinWords=10') AS summary_highlight
"""
_NEWEST = text("SELECT max(id) FROM articles")
_MARKS = f'StartSel="{MARK_START}", StopSel="{MARK_END}", FragmentDelimiter=" … "'


class PostgresSearch:
    """The SearchBackend on the articles table."""

    name = POSTGRES

    def __init__(self, sessions: Callable[[], AbstractAsyncContextManager[AsyncSession]], *, candidates: int,
                 sparse_rows: int = SPARSE_ROWS, walk_rows: int = WALK_ROWS) -> None:  # fmt: skip
        self._sessions = sessions
        self._windows = Windows(candidates=candidates, sparse_rows=sparse_rows, walk_rows=walk_rows)

    async def newest_article_id(self) -> int:
        """The id of the newest article stored (0: none): what a search's pages are bounded by."""
        async with self._sessions() as db:
            return int(await db.scalar(_NEWEST) or 0)

    async def search(self, query: SearchQuery, *, now: datetime, limit: int, offset: int) -> SearchResult:
        words = checked(query.text)
        correctable = _correctable(words)
        async with self._sessions() as db:
            await db.execute(_PLANNING)  # for the whole transaction
            hits = await self._found(db, query, words, now=now, limit=limit, offset=offset)
            if hits or offset or not correctable:
                return SearchResult(hits, backend=self.name)
            better = await terms.corrected(db, words)
            if better is None:
                return SearchResult([], backend=self.name)
            hits = await self._found(db, query, better, now=now, limit=limit, offset=offset)
            return SearchResult(hits, backend=self.name, corrected=better if hits else None)

    async def _found(self, db: AsyncSession, query: SearchQuery, words: str, *, now: datetime, limit: int,
                     offset: int) -> list[SearchHit]:  # fmt: skip
        """The title and summary's hits after `query.after` (or from `offset`), then, when they do not fill the page,
        the body's (app/search/body.py): a position in the body's tier, or an offset past the first tier's last hit,
        is one in the second."""
        configs, params = _configs(query)
        exact, loose = await _parsed(db, words, configs, params)
        filter_query, filters, filter_params = _filters(query)
        # the index finds the loosened query's matches; the exact query is tested on them, last (after the dates)
        searched = f"(CAST(:{'loose' if loose else 'exact'} AS tsquery){filter_query})"
        exact_test = "AND ts_match_vq(a.search_vector, CAST(:exact AS tsquery))" if loose else ""
        inner = "published_at DESC, id DESC" if query.newest_first else "score DESC, id DESC"
        after = query.after
        parts = {
            "configs": configs,
            "searched": searched,
            "matches": self._windows.sql(filters, searched, exact_test),
            "rank_weight": RANK_WEIGHT,
            "fresh_weight": FRESHNESS_WEIGHT,
            "freshness": _FRESHNESS,
            "grouping": "place = 1" if query.by_story else "true",
            "after": AFTER.format(inner.replace(" DESC", "")) if after and after.tier == TITLE_TIER else "",
            "inner_order": inner,
            "outer_order": ", ".join(f"page.{part}" for part in inner.split(", ")),
            "highlights": _HEADLINES,
        }
        windows = await self._windows.params(db, now=now, until=query.until)
        bound = {**params, **filter_params, **windows, "exact": exact, "loose": loose, "now": now, "marks": _MARKS}
        hits: list[SearchHit] = []
        if after is None or after.tier == TITLE_TIER:
            rows = await db.execute(text(_RANKED.format(**parts)), {**bound, **paging(limit, offset, after)})
            hits = [SearchHit(r.id, r.cluster_id, float(r.score), highlighted(r.title_highlight),
                              highlighted(r.summary_highlight), int(r.matches),
                              SearchPosition(TITLE_TIER, r.published_at if query.newest_first else float(r.score),
                                             r.id)) for r in rows]  # fmt: skip
        if len(hits) >= limit:
            return hits
        if after is not None:  # the body's hits from its first, or after the position in it
            body_after, body_offset = (after if after.tier == BODY_TIER else None), 0
        elif hits or not offset:
            body_after, body_offset = None, 0
        else:  # a page past the first tier's hits: how many it has
            first_tier = int(await db.scalar(text(_COUNTED.format(**parts)), bound) or 0)
            body_after, body_offset = None, max(offset - first_tier, 0)
        return hits + await body_hits(
            db, query, configs=configs, exact=exact, loose=loose is not None, filter_query=bool(filter_query),
            filters=filters, headline_config=_HEADLINE_CONFIG, freshness=_FRESHNESS, params=bound,
            limit=limit - len(hits), offset=body_offset, after=body_after,
        )  # fmt: skip


def _correctable(words: str) -> bool:
    return len(words.split()) <= TYPO_MAX_WORDS and not _OPERATORS.search(words) and not _CJK.search(words)


def _configs(query: SearchQuery) -> tuple[str, dict[str, Any]]:
    """The text search configurations a query is parsed in: unstemmed, and each language it names (English when
    it names none)."""
    languages = sorted(set(query.languages)) or [DEFAULT_LANGUAGE]  # (the API takes at most 20)
    params: dict[str, Any] = {f"language{n}": language for n, language in enumerate(languages)}
    configs = ["'newsagg_simple'::regconfig", *(f"newsagg_ts_config(:language{n})" for n in range(len(languages)))]
    return f"ARRAY[{', '.join(configs)}]", params


async def _parsed(db: AsyncSession, words: str, configs: str, params: dict[str, Any]) -> tuple[str, str | None]:
    """The query as tsquery text, its forms joined by OR (each once: a language's form is often the unstemmed one),
    and its loosened form (app/search/tsquery.py) when that differs. SearchRejected when it has no searchable word
    (no unstemmed form)."""
    rows = (await db.execute(text(_FORMS.format(configs=configs)), {**params, "query": words})).all()
    if not rows or not rows[0].form:  # the unstemmed form comes first
        raise SearchRejected("the query has no searchable word")
    forms = list(dict.fromkeys(row.form for row in rows if row.form))
    exact = " | ".join(f"( {form} )" for form in forms)
    loose = [tsquery.loosened(form) for form in forms]
    if loose == forms or None in loose:  # nothing to loosen, or nothing would be left to require
        return exact, None
    return exact, " | ".join(f"( {form} )" for form in dict.fromkeys(loose))


def _filters(query: SearchQuery) -> tuple[str, str, dict[str, Any]]:
    """The topic, source and language filters as a tsquery of the lexemes the search vector holds for them
    (migration 0011: `~topic:world`, `~source:12`, `~language:fr`), so the text-search index applies them with the
    words; the date range, and the newest article a search pages over, as conditions."""
    any_of = [[f"~topic:{t}" for t in query.topics], [f"~source:{int(s)}" for s in query.source_ids],
              [f"~language:{lang}" for lang in query.languages]]  # fmt: skip
    lexemes = " & ".join("(" + " | ".join(_quoted(lexeme) for lexeme in group) + ")" for group in any_of if group)
    conditions: list[str] = []
    params: dict[str, Any] = {}
    if query.since:
        conditions.append("AND a.published_at >= :since")
        params["since"] = query.since
    if query.until:
        conditions.append("AND a.published_at < :until")
        params["until"] = query.until
    if query.newest_id is not None:
        conditions.append("AND a.id <= :newest_id")
        params["newest_id"] = query.newest_id
    if lexemes:
        params["filters"] = lexemes
    return " && CAST(:filters AS tsquery)" if lexemes else "", " ".join(conditions), params


def _quoted(lexeme: str) -> str:
    """A lexeme in tsquery syntax (topics, sources and languages are checked by the API; quoted all the same)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
