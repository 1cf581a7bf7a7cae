"""The search contract: what every search backend must do, run against each one through the same interface the API
uses (`app.search.service.Search`), after the index sync has run as the worker runs it.

PostgreSQL always runs it. Meilisearch runs it when MEILI_URL points at a server (MEILI_MASTER_KEY if it needs
one); each test then uses an index of its own, dropped afterwards.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, text, update

from app.articles.models import Article
from app.extraction import repository as texts
from app.extraction.text import ExtractedArticle
from app.search.query import SearchQuery, SearchRejected, SearchResult
from app.search.service import Search
from app.search.sync import status, sync_pending
from app.services import Services
from app.settings import Settings
from tests.newsroom import NO_MEILI, add_source, meili_settings, search_newsroom

_serial = itertools.count(1)


@dataclass
class Backend:
    search: Search
    services: Services
    settings: Settings

    async def find(self, query: str, *, limit: int = 50, offset: int = 0, **wanted: Any) -> SearchResult:
        """The index synced as the worker does it, then the search."""
        await sync_pending(self.services.engine, self.search.meili, self.settings)
        # I-8: everything committed is in the index
        assert (await status(self.services.engine, self.search.meili)).pending_events == 0
        for name in ("topics", "source_ids", "languages"):
            wanted[name] = tuple(wanted.get(name, ()))
        return await self.search.search(SearchQuery(query, **wanted), now=datetime.now(UTC), limit=limit,
                                        offset=offset)  # fmt: skip

    async def titles(self, query: str, **wanted: Any) -> list[str]:
        found = await self.find(query, **wanted)
        async with self.services.engine.connect() as connection:
            rows = await connection.execute(text("SELECT id, title FROM articles WHERE id = ANY(:ids)"),
                                            {"ids": [hit.article_id for hit in found.hits]})  # fmt: skip
            titles = {row.id: row.title for row in rows}
        return [titles[hit.article_id] for hit in found.hits]


@pytest.fixture(params=["postgres", "meilisearch"])
async def backend(request: pytest.FixtureRequest, services: Services, settings: Settings) -> AsyncIterator[Backend]:
    if request.param == "postgres":
        yield Backend(services.search, services, settings)
        return
    url = os.environ.get("MEILI_URL")
    if not url:
        pytest.skip(NO_MEILI)
    own = meili_settings(settings, url)
    search = Search(own, services.db, services.redis)
    assert search.meili is not None
    yield Backend(search, services, own)
    await search.meili.drop()


async def add_article(services: Services, source: int, title: str, summary: str = "", *, language: str = "en",
                      topics: tuple[str, ...] = ("world",), age: timedelta = timedelta(hours=1)) -> int:  # fmt: skip
    n = next(_serial)
    async with services.db.begin() as session:
        article = Article(source_id=source, external_id=f"c{n}", url=f"https://contract{source}.example/{n}",
                          title=title, summary=summary, author=None, published_at=datetime.now(UTC) - age,
                          content_hash=n, language=language, topics=list(topics))  # fmt: skip
        session.add(article)
        await session.flush()
        return article.id


async def test_words_phrases_exclusions_and_or(backend: Backend) -> None:
    await search_newsroom(backend.services, backend.settings)
    flood = await backend.titles("flood")
    assert len(flood) == 5  # four articles of the Valencia story and the insurance one
    assert sorted(await backend.titles('"flood waters"')) == sorted(t for t in flood if t.startswith("Flood waters"))
    assert await backend.titles('"rates flood"') == []  # both words, but apart
    assert await backend.titles('"flood insurance"') == ["Rates of flood insurance climb"]
    assert sorted(await backend.titles("flood -insurance")) == sorted(t for t in flood if "insurance" not in t)
    assert len([t for t in flood if "insurance" not in t]) == 4
    assert len(await backend.titles("valencia or insurance")) == 5
    assert await backend.titles("volcano") == []


async def test_highlights_are_escaped_html_with_marks(backend: Backend) -> None:
    source = await add_source(backend.services, backend.settings, "wire")
    await add_article(backend.services, source, "AT&T <script>alert(1)</script> buys satellite firm",
                      "The deal for the satellite maker " + "closes next year after review. " * 20)  # fmt: skip
    hit = (await backend.find("satellite")).hits[0]
    assert hit.title_highlight == "AT&amp;T &lt;script&gt;alert(1)&lt;/script&gt; buys <mark>satellite</mark> firm"
    assert "<mark>satellite</mark>" in hit.summary_highlight
    assert len(hit.summary_highlight.split()) < 60  # an extract, not the whole summary


async def test_filters_sort_and_one_hit_per_story(backend: Backend) -> None:
    outlets = await search_newsroom(backend.services, backend.settings)
    assert await backend.titles("rates", topics=["world"]) == []
    assert await backend.titles("rates", languages=["fr"]) == ["Rates of flood insurance climb"]
    assert await backend.titles("rates", since=datetime.now(UTC) - timedelta(days=7)) == [
        "Rates of flood insurance climb"]  # fmt: skip
    assert len(await backend.titles("rates", until=datetime.now(UTC) - timedelta(days=7))) == 2
    assert len(await backend.titles("flood", source_ids=[outlets[3]])) == 1
    grouped = await backend.find("flood", by_story=True)
    assert sorted(hit.matches_in_story for hit in grouped.hits) == [1, 4]  # one card per story
    newest = await backend.titles("rates", newest_first=True)
    assert newest[0] == "Rates of flood insurance climb"
    assert len(newest) == 3


async def test_pages_do_not_overlap(backend: Backend) -> None:
    source = await add_source(backend.services, backend.settings, "wire")
    for n in range(7):
        await add_article(backend.services, source, f"Election night update number {n}", age=timedelta(hours=n))
    pages = [await backend.find("election", limit=3, offset=offset) for offset in (0, 3, 6)]
    ids = [hit.article_id for page in pages for hit in page.hits]
    assert len(ids) == len(set(ids)) == 7


async def test_accents_languages_and_cjk(backend: Backend) -> None:
    source = await add_source(backend.services, backend.settings, "wire")
    await add_article(backend.services, source, "Élection présidentielle: le second tour", language="fr")
    await add_article(backend.services, source, "Senate election results are in", language="en")
    await add_article(backend.services, source, "中国新闻报道今日发布", language="zh")
    await add_article(backend.services, source, "東京で地震が発生しました", language="ja")
    assert len(await backend.titles("election")) == 2  # accents folded
    assert len(await backend.titles("élection")) == 2
    assert await backend.titles("elections", languages=["en"]) == ["Senate election results are in"]
    assert await backend.titles("présidentielle", languages=["fr"]) == ["Élection présidentielle: le second tour"]
    assert await backend.titles("新闻") == ["中国新闻报道今日发布"]  # a word inside CJK text
    assert await backend.titles("地震") == ["東京で地震が発生しました"]


async def test_a_short_query_with_a_typo_finds_the_title(backend: Backend) -> None:
    source = await add_source(backend.services, backend.settings, "wire")
    await add_article(backend.services, source, "Russia and Ukraine agree to talks")
    await add_article(backend.services, source, "Umpires strike at the UK open")
    assert await backend.titles("ukriane") == ["Russia and Ukraine agree to talks"]


async def test_changes_and_deletions_reach_the_index(backend: Backend) -> None:
    source = await add_source(backend.services, backend.settings, "wire")
    kept = await add_article(backend.services, source, "Harbour bridge reopens")
    gone = await add_article(backend.services, source, "Harbour tunnel closes")
    assert len(await backend.titles("harbour")) == 2
    async with backend.services.db.begin() as session:
        await session.execute(delete(Article).where(Article.id == gone))
        await session.execute(update(Article).where(Article.id == kept).values(topics=["business"]))
    assert await backend.titles("harbour") == ["Harbour bridge reopens"]
    assert await backend.titles("harbour", topics=["business"]) == ["Harbour bridge reopens"]


@pytest.mark.parametrize("query", ["", "   ", "x " * 30, "y" * 201, "-trump", "!!! ???", "- or -"])
async def test_queries_that_cannot_be_searched_are_refused(backend: Backend, query: str) -> None:
    with pytest.raises(SearchRejected):
        await backend.find(query)


async def test_an_articles_own_text_is_searched_below_its_title(backend: Backend) -> None:
    source = await add_source(backend.services, backend.settings, "longreads")
    in_body = await add_article(backend.services, source, "Harbour reopens after the storm", "Ferries run again.")
    in_title = await add_article(backend.services, source, "Lighthouse keeper retires", "After forty years.")
    async with backend.services.db.begin() as db:
        await texts.save_page_text(db, in_body, ExtractedArticle(
            text="Crews worked through the night. " * 20 + "The old lighthouse lost its lamp. " + "Calm. " * 20,
            html="<p>…</p>"))  # fmt: skip
    found = await backend.find("lighthouse")
    assert [hit.article_id for hit in found.hits] == [in_title, in_body]
    if found.backend == "postgres":  # the body's extract, as only it matched (Meilisearch's hit shows its summary)
        assert "<mark>lighthouse</mark>" in found.hits[1].summary_highlight
