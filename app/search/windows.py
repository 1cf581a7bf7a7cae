"""How PostgreSQL search finds a query's newest matches, up to `candidates`, for app/search/postgres.py to rank: the
first day's, then older windows one at a time, a walk back from the first day, or everything older at once, as the
first day's count of matches predicts (one-time filters on the counts, all in the search's one statement).

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
sorted after its matches are found; the first window's walk is bounded by a day of articles.

The first day's and the week's windows are answered by the text-search index over the last days' articles when it
exists (app/search/recent.py): the planner proves it covers them from their dates.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.search.query import days_before

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
_CANDIDATES = f"""
    candidates AS (
        SELECT * FROM ({_UNION}) AS found ORDER BY published_at DESC LIMIT :candidates
    ),"""
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


@dataclass(frozen=True, slots=True)
class LastDay:
    """A query's matches in its first day, divided by `articles`, is their density, which predicts how far a walk
    goes for the missing ones; times `older_per_article`, how many older matches it has."""

    articles: int
    older_per_article: float


class Windows:
    """The `candidates` CTE (a query's newest matches, up to `candidates`) and the parameters it reads, with the
    last day's counts it chooses its path by (counted at most every RATIO_SECONDS, per process)."""

    def __init__(self, *, candidates: int, sparse_rows: int = SPARSE_ROWS, walk_rows: int = WALK_ROWS) -> None:
        self._candidates = candidates
        self._sparse_rows = sparse_rows
        self._walk_rows = walk_rows
        self._last_day = (LastDay(0, 0.0), -math.inf)  # and until when it is trusted

    @staticmethod
    def sql(filters: str, searched: str, exact: str) -> str:
        """The CTEs up to `candidates`, for a query whose index condition is `searched` (a tsquery expression, its
        filters included), tested with `exact` (an `AND` condition, or empty) and the date conditions `filters`."""
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
        return "".join(sql) + _CANDIDATES

    async def params(self, db: AsyncSession, *, now: datetime, until: datetime | None) -> dict[str, Any]:
        """The windows' bounds (counted back from `until` when it is given: nothing is newer) and the counts."""
        end = min(now, until) if until else now
        day = await self.last_day(db, now)
        return {
            **{f"window{n}": days_before(end, days) for n, days in enumerate(TIERS_DAYS)},
            "candidates": self._candidates,
            "sparse": min(self._candidates, int(self._sparse_rows / max(day.older_per_article, 1e-9))),
            "day_articles": day.articles,
            "walk_rows": self._walk_rows,
            "walk_predicted": int(self._walk_rows * WALK_SHARE),
        }

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
