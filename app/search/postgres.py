"""Full-text search on PostgreSQL: the default backend, and the one every other falls back to.

The database keeps each article's search vector (migration 0010): title weight A, summary B, in the article's
language (stemmed, accents folded) and unstemmed, CJK text as character bigrams. A query is parsed by
`websearch_to_tsquery` (quotes, `-`, `or`) unstemmed and in each language it names (English when it names none), the
forms joined by OR, so "elections" finds "election" in an English article and any article's exact words match
whatever its language (each distinct form once). Topic, source and language filters are lexemes of the same vector
(migration 0011), so the index applies them with the words. The index is asked for the query loosened, phrases as
AND and exclusions dropped (app/search/tsquery.py), and the exact query is tested on the rows it finds, after their
dates: the index cannot check word positions anyway (every phrase is tested on the stored vectors), and it reads no
posting list for an excluded word. Hits are highlighted by `ts_headline`, and optionally one per story (its best
article, with how many of the story's articles matched).

Ranking: of the matches, the newest `candidates` (1,000 by default) are ranked by `ts_rank_cd` blended with
freshness, and pages walk them. That bounds the work for a word in every tenth headline (PostgreSQL would otherwise
rank tens of thousands of rows to show 20): news is searched for what is recent, and an older article of such a
word is reached by narrowing the search (`from`/`to`, topics, sources) rather than by paging past a thousand hits.

A short query (up to 3 words, no operators) that matches nothing has its unknown words corrected from the words of
titles (app/search/terms.py: "ukriane" → "ukraine") and is searched again; its hits say so (`corrected`).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.search import terms, tsquery
from app.search.query import (
    MARK_END,
    MARK_START,
    POSTGRES,
    SUMMARY_WORDS,
    SearchHit,
    SearchQuery,
    SearchRejected,
    SearchResult,
    checked,
    highlighted,
)

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
# windows want that guess: `_tiers`). work_mem keeps a common word's bitmap exact (not lossy). No parallel workers: a
# window whose one-time filter is false still started two (about 50 ms) before skipping its scan.
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

TIERS_DAYS = (1, 7, 30)  # matches are taken newest first, a window at a time: older windows only while needed
SPARSE_ROWS = 5000  # a query expected to match at most this many articles older than its first day reads them at once
RATIO_SECONDS = 600.0  # how long the count of a day's articles against the rest is trusted
WALK_ROWS = 24000  # the most articles walked newest first for the few matches the first day leaves missing
WALK_SHARE = 0.5  # a walk is tried when the first day's density predicts them within this share of WALK_ROWS
# (an article walked costs about 1 µs; a week's window, 15 to 30 ms)
_TIER_NAMES = [f"tier{n}" for n in range(len(TIERS_DAYS) + 1)] + ["older"]
_COUNTS = [f"(SELECT count(*) FROM {name})" for name in _TIER_NAMES]
_WALKED = f"(SELECT count(*) FROM walk) >= :candidates - {_COUNTS[0]}"  # the walk found every missing match
_UNION = " UNION ALL ".join([f"SELECT * FROM {name}" for name in _TIER_NAMES] + [f"SELECT * FROM walk WHERE {_WALKED}"])
_UNINDEXED = "(a.published_at + interval '0 s')"
_LAST_DAY = text("""
    SELECT (SELECT reltuples FROM pg_class WHERE oid = CAST('articles' AS regclass)) AS articles,
           (SELECT count(*) FROM articles WHERE published_at >= :day) AS recent""")

_TIER = """
    {name} AS (
        SELECT a.id, a.cluster_id, a.published_at, a.search_vector
        FROM articles a
        WHERE {matching} {filters} {window} AND {still_needed} {exact}
        ORDER BY {newest} DESC
        LIMIT :candidates
    ),"""

_WALK = """
    walk AS (
        SELECT a.* FROM (
            SELECT a.id, a.cluster_id, a.published_at, a.search_vector
            FROM articles a
            WHERE a.published_at < :window0 {filters} AND {walking}
            ORDER BY a.published_at DESC
            LIMIT :walk_rows
        ) AS a
        WHERE ts_match_vq(a.search_vector, {searched}) {exact}
        LIMIT :candidates - {first}
    ),"""

_RANKED = """
    WITH q AS (SELECT CAST(:exact AS tsquery) AS query, {configs} AS configs, {searched} AS searched),
    {tiers}
    candidates AS (
        SELECT * FROM ({union}) AS found ORDER BY published_at DESC LIMIT :candidates
    ),
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
    ),
    page AS (
        SELECT * FROM grouped WHERE {grouping}
        ORDER BY {inner_order}
        LIMIT :limit OFFSET :offset
    )
    SELECT page.id, page.cluster_id, page.score, page.matches, {highlights}
    FROM page JOIN articles a ON a.id = page.id, q
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

    name = POSTGRES

    def __init__(self, sessions: Callable[[], AbstractAsyncContextManager[AsyncSession]], *, candidates: int,
                 sparse_rows: int = SPARSE_ROWS, walk_rows: int = WALK_ROWS) -> None:  # fmt: skip
        self._sessions = sessions
        self._candidates = candidates
        self._sparse_rows = sparse_rows
        self._walk_rows = walk_rows
        self._last_day = (LastDay(0, 0.0), -math.inf)  # and until when it is trusted

    async def search(self, query: SearchQuery, *, now: datetime, limit: int, offset: int) -> SearchResult:
        words = checked(query.text)
        correctable = _correctable(words)
        async with self._sessions() as db:
            await db.execute(_PLANNING)  # for the whole transaction
            hits = await self._ranked(db, query, words, now=now, limit=limit, offset=offset)
            if hits or offset or not correctable:
                return SearchResult(hits, backend=self.name)
            better = await terms.corrected(db, words)
            if better is None:
                return SearchResult([], backend=self.name)
            hits = await self._ranked(db, query, better, now=now, limit=limit, offset=offset)
            return SearchResult(hits, backend=self.name, corrected=better)

    async def _ranked(self, db: AsyncSession, query: SearchQuery, words: str, *, now: datetime, limit: int,
                      offset: int) -> list[SearchHit]:  # fmt: skip
        configs, params = _configs(query)
        exact, loose = await _parsed(db, words, configs, params)
        filter_query, filters, filter_params = _filters(query)
        # the index finds the loosened query's matches; the exact query is tested on them, last (after the dates)
        searched = f"(CAST(:{'loose' if loose else 'exact'} AS tsquery){filter_query})"
        exact_test = "AND ts_match_vq(a.search_vector, CAST(:exact AS tsquery))" if loose else ""
        inner = "published_at DESC, id DESC" if query.newest_first else "score DESC, id DESC"
        sql = _RANKED.format(
            configs=configs, searched=searched, tiers=_tiers(filters, searched, exact_test), union=_UNION,
            rank_weight=RANK_WEIGHT, fresh_weight=FRESHNESS_WEIGHT, freshness=_FRESHNESS,
            grouping="place = 1" if query.by_story else "true", inner_order=inner,
            outer_order=", ".join(f"page.{part}" for part in inner.split(", ")), highlights=_HEADLINES,
        )  # fmt: skip
        end = min(now, query.until) if query.until else now  # windows count back from `until`: nothing is newer
        windows = {f"window{n}": end - timedelta(days=days) for n, days in enumerate(TIERS_DAYS)}
        day = await self.last_day(db, now)
        sparse = min(self._candidates, int(self._sparse_rows / max(day.older_per_article, 1e-9)))
        rows = await db.execute(text(sql), {**params, **filter_params, **windows, "exact": exact, "loose": loose,
                                            "now": now, "limit": limit, "offset": offset, "marks": _MARKS,
                                            "candidates": self._candidates, "sparse": sparse,
                                            "day_articles": day.articles, "walk_rows": self._walk_rows,
                                            "walk_predicted": int(self._walk_rows * WALK_SHARE)})  # fmt: skip
        return [SearchHit(r.id, r.cluster_id, float(r.score), highlighted(r.title_highlight),
                          highlighted(r.summary_highlight), int(r.matches)) for r in rows]  # fmt: skip

    async def last_day(self, db: AsyncSession, now: datetime) -> LastDay:
        """The last day's articles, and how many are older for each (counted at most every RATIO_SECONDS)."""
        day, until = self._last_day
        if time.monotonic() < until:
            return day
        row = (await db.execute(_LAST_DAY, {"day": now - timedelta(days=TIERS_DAYS[0])})).one()
        recent = int(row.recent)
        articles = max(float(row.articles), recent)  # (reltuples is -1 before the first ANALYZE)
        day = LastDay(recent, (articles - recent) / max(recent, 1))
        self._last_day = (day, time.monotonic() + RATIO_SECONDS)
        return day


@dataclass(frozen=True, slots=True)
class LastDay:
    """A query's matches in its first day, divided by `articles`, is their density, which predicts how far a walk
    goes for the missing ones; times `older_per_article`, how many older matches it has."""

    articles: int
    older_per_article: float


def _tiers(filters: str, searched: str, exact: str) -> str:
    """The matches newest first, up to `candidates`: the first day's, then either older windows one at a time or
    everything older at once, as the first day's count predicts (one-time filters on the counts).

    - Windows (7 days, 30, all): each is searched only while the newer ones found fewer than `candidates`, so a
      common word reads a day or a week of matches, not all of them. The date index narrows a window only with the
      text index (a bitmap of each, intersected), which the planner does when it expects many matches: the windows
      read the query from `q`, a value the planner does not see, so it expects 0.5% of articles to match. They are
      searched only for a query with many matches in its first day, for which that is nearer the truth than its
      estimate for words that go together (the product of their frequencies: "TV Patrol", 700 expected, 19,000
      found, each read to test its date: 130 ms for a week's window, 30 ms intersected).
    - Everything older at once (`older`), when the first day's matches times the articles older than a day for each
      of the day's (`:sparse` is SPARSE_ROWS divided by that) predicts few older matches: their rows are read once.
      Windows would read each of them once per window whenever the planner reads the text index alone.
    - A walk (`walk`), when the first day found most of `candidates` and its density (matches per article of the
      last day) predicts the missing ones within WALK_SHARE of WALK_ROWS articles: the date index is walked back from
      the first day, each article tested, until they are found or WALK_ROWS articles were read. A week's window finds
      all of a week's matches to keep the newest few: "stop or patients" has 959 matches in its first day, and the
      week read 3,686 more in 24 ms to keep 41; the walk reads 1,541 articles in 2 ms. A walk that falls short (the
      words were rarer before that day) gives way to the windows, its rows unused: at most WALK_ROWS articles (about
      25 ms) spent for nothing.

    Only the first window may be read in date order (the date index walked backwards, each row tested against the
    query until `candidates` match): a later window is reached only by a word with fewer than `candidates` matches
    in a day, whose matches the text-search index finds faster. The walk is what the planner picks for a word its
    statistics call common, and they can be wrong: "contra" is common in Spanish, and with `languages: [en]` the
    planner multiplies the two frequencies, expects thousands of matches and walked a whole month's window (450,000
    articles, 270 ms) to find 26. `published_at + 0` is a value the index does not hold, so a later window is
    sorted after its matches are found; the first window's walk is bounded by a day of articles."""
    seen, unseen = f"a.search_vector @@ {searched}", "a.search_vector @@ (SELECT q.searched FROM q)"
    first = _COUNTS[0]
    tiers = [(seen, "a.published_at >= :window0", "true", "a.published_at")]
    for n in range(1, len(TIERS_DAYS) + 1):
        window = " AND ".join(([f"a.published_at >= :window{n}"] if n < len(TIERS_DAYS) else [])
                              + [f"a.published_at < :window{n - 1}"])  # fmt: skip
        needed = f"{first} >= :sparse AND {' + '.join(_COUNTS[:n])} < :candidates AND NOT {_WALKED}"
        tiers.append((unseen, window, needed, _UNINDEXED))
    # the date hidden from its index here too: with it, the planner could intersect the matches with every older
    # article (most of the date index) to read fewer rows
    tiers.append((seen, f"{_UNINDEXED} < :window0", f"{first} < :sparse", _UNINDEXED))
    sql = [_TIER.format(name=name, matching=matching, exact=exact, filters=filters, window=f"AND {window}",
                        still_needed=needed, newest=newest)
           for name, (matching, window, needed, newest) in zip(_TIER_NAMES, tiers, strict=True)]  # fmt: skip
    walking = (
        f"{first} >= :sparse AND {first} > 0 AND {first} < :candidates"
        f" AND (:candidates - {first}) * :day_articles <= :walk_predicted * {first}"
    )
    sql.insert(1, _WALK.format(filters=filters, walking=walking, searched=searched, exact=exact, first=first))
    return "".join(sql)


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
    words; the date range as conditions."""
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
    if lexemes:
        params["filters"] = lexemes
    return " && CAST(:filters AS tsquery)" if lexemes else "", " ".join(conditions), params


def _quoted(lexeme: str) -> str:
    """A lexeme in tsquery syntax (topics, sources and languages are checked by the API; quoted all the same)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
