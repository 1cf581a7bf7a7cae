"""What a search asks and what it answers, whichever backend runs it (PostgreSQL full text or Meilisearch).

Highlights are HTML: the article's text escaped, each match inside `<mark>…</mark>`, so a client can render them as
they are. A backend marks matches with two private-use characters and `highlighted` turns them into tags after
escaping, so no markup from an article ever reaches a client unescaped.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

MAX_QUERY_CHARS = 200
MAX_QUERY_WORDS = 20
SUMMARY_WORDS = 30  # the longest summary extract a hit shows
MARK_START, MARK_END = "\ue000", "\ue001"
POSTGRES, MEILISEARCH = "postgres", "meilisearch"  # the backends' names
TITLE_TIER, BODY_TIER = 1, 2  # PostgreSQL's hits: title or summary matches, then those of the article's own text
_MARKS = re.compile(f"[{MARK_START}{MARK_END}]")
_WORD = re.compile(r"[^\W_]")


class SearchRejected(ValueError):
    """A query that cannot be searched: empty, too long, or without a searchable word."""


class SearchUnavailable(RuntimeError):
    """The search backend did not answer: down, too slow, or refusing the request."""


@dataclass(frozen=True, slots=True)
class SearchPosition:
    """Where a PostgreSQL hit stands in its search's order: its tier, what the tier sorts by (the score; the
    publication time in date order, and always in the body's tier) and its id, the tie-break. A later page asks for
    the hits after it, not for those past an offset: an article's id is taken before its transaction commits, so one
    with an id under the first page's newest (`SearchQuery.newest_id`) can commit between pages. Past an offset it
    would shift every later hit by one (a hit shown twice, or one never shown); after a position it lands before or
    after that hit, and is shown or not, but moves no other hit from one page to the next."""

    tier: int  # TITLE_TIER or BODY_TIER
    value: float | datetime
    article_id: int


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
    # Only articles up to this id: those stored when a search's first page was asked, so its later pages page over
    # the same matches (an article stored since would shift them). None: every article.
    newest_id: int | None = None
    # A later page: the hits after this one (PostgreSQL). None: the first page, or a page of Meilisearch's, which
    # goes by the offset.
    after: SearchPosition | None = None


@dataclass(frozen=True, slots=True)
class SearchHit:
    article_id: int
    story_id: int | None
    score: float
    title_highlight: str
    summary_highlight: str
    matches_in_story: int
    position: SearchPosition | None = None  # PostgreSQL's hits: where the next page starts from


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: list[SearchHit]
    backend: str  # "postgres" or "meilisearch": the one that answered
    corrected: str | None = None  # the query as searched, when it was corrected
    newest_id: int | None = None  # the query's newest_id, as the search service set it for a first page

    @property
    def approximate(self) -> bool:
        """Found by corrected words, not the words typed (a short query with a typo)."""
        return self.corrected is not None


class SearchBackend(Protocol):
    name: str

    async def search(self, query: SearchQuery, *, now: datetime, limit: int, offset: int) -> SearchResult:
        """Hits best first (or newest first), `limit` of them: after `query.after` on a backend that pages by
        position (PostgreSQL), else after skipping `offset`. SearchRejected for a query that cannot be searched,
        SearchUnavailable when the backend does not answer."""
        ...


def checked(query: str) -> str:
    """The query as searched; SearchRejected when it is empty or over the bounds."""
    cleaned = " ".join(_MARKS.sub(" ", query).split())
    if not cleaned:
        raise SearchRejected("the query is empty")
    if len(cleaned) > MAX_QUERY_CHARS or len(cleaned.split()) > MAX_QUERY_WORDS:
        raise SearchRejected(f"a query has at most {MAX_QUERY_CHARS} characters and {MAX_QUERY_WORDS} words")
    if not any(_WORD.search(term) for term in cleaned.split() if not term.startswith("-") and term.lower() != "or"):
        # nothing to look for: matching every article without the excluded words would scan the whole corpus
        raise SearchRejected("the query has no word to look for (only exclusions or punctuation)")
    return cleaned


def days_before(end: datetime, days: int) -> datetime:
    """`days` before `end`, or the first moment of year 1 when that is earlier (a search `to` days into year 1)."""
    first = datetime.min.replace(tzinfo=UTC)
    return end - timedelta(days=days) if end - first > timedelta(days=days) else first


def highlighted(marked: str) -> str:
    """Text with matches between MARK_START and MARK_END, as escaped HTML with `<mark>` tags."""
    return html.escape(marked, quote=False).replace(MARK_START, "<mark>").replace(MARK_END, "</mark>")
