"""Search on Meilisearch, through the official client (synchronous, so each call runs in a worker thread).

The index holds one document per article (app/search/documents.py). Its settings: title, summary and full text
searchable (in that order), topics, source, language, published_at and story filterable, published_at sortable, and
the default ranking rules with recency (`published_at:desc`) last, so of equally good matches the newest comes first.
Highlights come from `_formatted`, marked with the same private-use characters as PostgreSQL's, so both backends
return the same escaped HTML. One hit per story is Meilisearch's `distinct` on `group` (the story, or the article
alone); how many of a story's articles matched comes from one facet count over the page's stories.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import meilisearch
from meilisearch.errors import MeilisearchApiError, MeilisearchCommunicationError, MeilisearchError

from app.search.query import (
    MARK_END,
    MARK_START,
    MEILISEARCH,
    SUMMARY_WORDS,
    SearchHit,
    SearchQuery,
    SearchResult,
    SearchUnavailable,
    checked,
    highlighted,
)

T = TypeVar("T")

SETTINGS: dict[str, Any] = {
    "searchableAttributes": ["title", "summary", "text"],
    "filterableAttributes": ["id", "topics", "source", "language", "published_at", "story", "group"],
    "sortableAttributes": ["published_at"],
    "rankingRules": ["words", "typo", "proximity", "attribute", "sort", "exactness", "published_at:desc"],
    "displayedAttributes": ["id", "title", "summary", "story", "published_at"],
    "pagination": {"maxTotalHits": 5000},
}
TASK_TIMEOUT_MS = 60_000  # indexing a batch: how long the sync waits for Meilisearch to apply it


class MeiliSearch:
    """The SearchBackend on a Meilisearch index, and the index's writer for the sync."""

    name = MEILISEARCH

    def __init__(self, url: str, api_key: str | None, index: str, *, timeout_seconds: float) -> None:
        self._searching = meilisearch.Client(url, api_key, timeout=max(1, round(timeout_seconds)))
        self._writing = meilisearch.Client(url, api_key, timeout=30)
        self.index_name = index
        self._configured = False

    async def search(self, query: SearchQuery, *, now: datetime, limit: int, offset: int) -> SearchResult:
        words = checked(query.text)
        options: dict[str, Any] = {
            "limit": limit, "offset": offset, "showRankingScore": True,
            "attributesToHighlight": ["title", "summary"], "attributesToCrop": ["summary"],
            "cropLength": SUMMARY_WORDS, "highlightPreTag": MARK_START, "highlightPostTag": MARK_END,
        }  # fmt: skip
        filters = _filters(query)
        if filters:
            options["filter"] = filters
        if query.newest_first:
            options["sort"] = ["published_at:desc"]
        if query.by_story:
            options["distinct"] = "group"
        index = self._searching.index(self.index_name)
        found = await _call(index.search, words, options)
        hits = found.get("hits", [])
        matches = await self._matches_in_stories(query, words, filters, hits) if query.by_story else {}
        return SearchResult(
            [SearchHit(int(hit["id"]), hit.get("story"), float(hit.get("_rankingScore", 0.0)),
                       highlighted(hit.get("_formatted", hit).get("title", "")),
                       highlighted(hit.get("_formatted", hit).get("summary", "")),
                       matches.get(hit.get("story"), 1)) for hit in hits],
            backend=self.name,
        )  # fmt: skip

    async def _matches_in_stories(self, query: SearchQuery, words: str, filters: list[Any],
                                  hits: Sequence[dict[str, Any]]) -> dict[int | None, int]:  # fmt: skip
        stories = sorted({int(hit["story"]) for hit in hits if hit.get("story") is not None})
        if not stories:
            return {}
        counted = await _call(self._searching.index(self.index_name).search, words,
                              {"limit": 0, "facets": ["story"],
                               "filter": [*filters, f"story IN [{', '.join(map(str, stories))}]"]})  # fmt: skip
        distribution = counted.get("facetDistribution", {}).get("story", {})
        return {int(story): int(n) for story, n in distribution.items()}

    async def configure(self) -> None:
        """Creates the index if needed and applies SETTINGS (once per process; Meilisearch skips unchanged ones)."""
        if self._configured:
            return
        try:
            await self._wait(await _call(self._writing.create_index, self.index_name, {"primaryKey": "id"}))
        except SearchUnavailable as error:
            if "index_already_exists" not in str(error):
                raise
        await self._wait(await _call(self._writing.index(self.index_name).update_settings, SETTINGS))
        self._configured = True

    async def upsert(self, documents: list[dict[str, Any]]) -> None:
        """Adds or replaces documents, and waits until Meilisearch has applied them."""
        if documents:
            await self.configure()
            await self._wait(await _call(self._writing.index(self.index_name).add_documents, documents, "id"))

    async def delete(self, ids: list[int]) -> None:
        if ids:
            await self.configure()
            index = self._writing.index(self.index_name)
            await self._wait(await _call(index.delete_documents, filter=f"id IN [{', '.join(map(str, ids))}]"))

    async def _wait(self, task: Any) -> None:
        done = await _call(self._writing.wait_for_task, task.task_uid, TASK_TIMEOUT_MS, 100)
        if done.status != "succeeded":
            raise SearchUnavailable(f"Meilisearch task {done.uid} {done.status}: {done.error}")

    async def drop(self) -> None:
        """Deletes the whole index (the tests' and the bench's own indexes)."""
        await self._wait(await _call(self._writing.delete_index, self.index_name))
        self._configured = False

    async def healthy(self) -> bool:
        try:
            return bool(await _call(self._searching.is_healthy))
        except SearchUnavailable:
            return False


def _filters(query: SearchQuery) -> list[Any]:
    filters: list[Any] = []
    if query.topics:
        filters.append(f"topics IN [{', '.join(_quoted(t) for t in query.topics)}]")
    if query.source_ids:
        filters.append(f"source IN [{', '.join(str(int(s)) for s in query.source_ids)}]")
    if query.languages:
        filters.append(f"language IN [{', '.join(_quoted(lang) for lang in query.languages)}]")
    if query.since:
        filters.append(f"published_at >= {int(query.since.timestamp())}")
    if query.until:
        filters.append(f"published_at < {int(query.until.timestamp())}")
    if query.newest_id is not None:
        filters.append(f"id <= {int(query.newest_id)}")
    return filters


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


async def _call(method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """The synchronous client call in a worker thread; any failure to answer is SearchUnavailable."""
    try:
        return await asyncio.to_thread(functools.partial(method, *args, **kwargs))
    except MeilisearchApiError as error:
        raise SearchUnavailable(f"Meilisearch refused: {error.code}: {error.message}") from error
    except (MeilisearchCommunicationError, MeilisearchError, OSError) as error:
        raise SearchUnavailable(f"Meilisearch unreachable: {error}") from error
