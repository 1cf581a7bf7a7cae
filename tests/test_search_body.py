"""PostgreSQL search's second tier (app/search/body.py): body-only matches come after every title and summary
match, newest first, and pages walk on from one tier into the other (by offset and by the API's cursors), with
filters, one hit per story and the date order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from app.articles.models import Article
from app.search.query import SearchQuery
from app.services import Services
from app.settings import Settings
from tests.conftest import GraphQLClient
from tests.newsroom import StorySpec, add_source, add_story
from tests.test_search_text import article, page_text

NOW = datetime.now(UTC)


async def hits(services: Services, query: SearchQuery, *, limit: int = 20, offset: int = 0) -> list[int]:
    result = await services.search.search(query, now=datetime.now(UTC), limit=limit, offset=offset)
    return [hit.article_id for hit in result.hits]


async def lighthouses(services: Services, settings: Settings) -> tuple[list[int], list[int]]:
    """Three articles with "lighthouse" in the title (1, 2 and 3 hours old) and four with it only in the body (one
    of them the newest of all)."""
    titled = [await article(services, settings, f"{n} lighthouse keeper", age=timedelta(hours=n))
              for n in (1, 2, 3)]  # fmt: skip
    bodies = []
    for n, age in enumerate((timedelta(minutes=30), timedelta(hours=4), timedelta(hours=5), timedelta(hours=6))):
        bodies.append(await article(services, settings, f"Report {n} from the coast", age=age))
        await page_text(services, bodies[-1], f"Report {n}. The old lighthouse on the cape was repainted.")
    return titled, bodies


async def test_pages_walk_from_title_matches_into_body_matches_by_offset(
    services: Services, settings: Settings
) -> None:
    titled, bodies = await lighthouses(services, settings)
    everything = await hits(services, SearchQuery("lighthouse"))
    assert everything == titled + bodies  # the body tier after the title tier, newest first within it
    for limit in (1, 2, 3, 5):
        paged = [i for offset in range(0, 9, limit)
                 for i in await hits(services, SearchQuery("lighthouse"), limit=limit, offset=offset)]  # fmt: skip
        assert paged == everything
    # a page wholly past the title matches (its first tier is empty: counted to find the offset into the second)
    assert await hits(services, SearchQuery("lighthouse"), limit=2, offset=5) == bodies[2:]
    assert await hits(services, SearchQuery("lighthouse"), limit=2, offset=7) == []
    newest = await hits(services, SearchQuery("lighthouse", newest_first=True))
    assert newest == titled + bodies  # date order within each tier: the newest article (a body match) still after


async def test_cursors_walk_across_the_tiers(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    await lighthouses(services, settings)
    titles, after, pages = [], None, 0
    while True:
        found = (await gql.run("Search", query="lighthouse", first=2, after=after))["search"]
        titles += [edge["node"]["article"]["title"] for edge in found["edges"]]
        pages += 1
        if not found["pageInfo"]["hasNextPage"]:
            break
        after = found["pageInfo"]["endCursor"]
    assert pages == 4
    assert titles == [f"{n} lighthouse keeper" for n in (1, 2, 3)] + [f"Report {n} from the coast" for n in range(4)]
    extract = (await gql.run("Search", query="lighthouse", first=4))["search"]["edges"][3]["node"]
    assert "old <mark>lighthouse</mark> on the cape" in extract["summaryHighlight"]


async def test_body_matches_obey_filters(services: Services, settings: Settings) -> None:
    english = await article(services, settings, "Harbour news", age=timedelta(hours=2))
    await page_text(services, english, "The ferry timetable changes in spring.")
    french = await article(services, settings, "Nouvelles du port", language="fr", age=timedelta(days=3))
    await page_text(services, french, "Le ferry timetable change au printemps.")
    async with services.db.begin() as db:
        source = await db.scalar(Article.__table__.select().with_only_columns(Article.source_id)
                                 .where(Article.id == english))  # fmt: skip
    assert await hits(services, SearchQuery("timetable")) == [english, french]
    assert await hits(services, SearchQuery("timetable", languages=("fr",))) == [french]
    assert await hits(services, SearchQuery("timetable", source_ids=(source,))) == [english]
    assert await hits(services, SearchQuery("timetable", since=NOW - timedelta(days=1))) == [english]
    assert await hits(services, SearchQuery("timetable", until=NOW - timedelta(days=1))) == [french]
    assert await hits(services, SearchQuery("timetable", topics=("science",))) == []


async def test_one_hit_per_story_leaves_out_stories_the_title_tier_showed(
    services: Services, settings: Settings
) -> None:
    sources = [await add_source(services, settings, f"paper-{n}") for n in range(2)]
    story, (headline, follow_up) = await add_story(services, StorySpec("Coastal news", sources), NOW)
    async with services.db.begin() as db:
        await db.execute(update(Article).where(Article.id == headline).values(title="Lighthouse restored"))
    await page_text(services, follow_up, "Volunteers painted the lighthouse red and white.")
    elsewhere = await article(services, settings, "Weekend ferry news", age=timedelta(hours=3))
    await page_text(services, elsewhere, "A lighthouse tour is planned.")
    assert await hits(services, SearchQuery("lighthouse")) == [headline, follow_up, elsewhere]
    grouped = await services.search.search(SearchQuery("lighthouse", by_story=True), now=datetime.now(UTC), limit=20,
                                           offset=0)  # fmt: skip
    # the story once, by its title match
    assert [(h.article_id, h.story_id) for h in grouped.hits[:1]] == [(headline, story)]
    assert [h.article_id for h in grouped.hits] == [headline, elsewhere]


async def test_phrases_and_exclusions_are_tested_on_the_body(services: Services, settings: Settings) -> None:
    phrase = await article(services, settings, "One port report")
    await page_text(services, phrase, "The harbour pilot boarded the tanker at dawn.")
    apart = await article(services, settings, "Two port report", age=timedelta(hours=2))
    await page_text(services, apart, "The pilot said the harbour was calm.")
    assert await hits(services, SearchQuery('"harbour pilot"')) == [phrase]
    assert await hits(services, SearchQuery("harbour pilot")) == [phrase, apart]
    assert await hits(services, SearchQuery("harbour pilot -tanker")) == [apart]
