"""Places under load: a page of thousands of stories grouped by outlet in one pass, and an article that names
thousands of places (a 100 KB summary, in English and in German) storing a bounded few."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

from sqlalchemy import text

from app.articles.understanding import understand_articles
from app.entities.extractor import MAX_ENTITIES, Entity
from app.ingest.refresh import ingest_body
from app.places import repository
from app.places.gazetteer import COUNTRIES_FILE
from app.places.perspectives import perspectives_by_story
from app.places.repository import MAX_PLACES, OutletGroupRow
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from tests.alerts import count
from tests.feeds import Item, rss

STORIES = 5_000
GERMAN = ("München", "Köln", "Wien", "Mailand", "Warschau", "Prag", "Moskau", "Peking", "Brüssel", "Kopenhagen")


class _Passes(list[OutletGroupRow]):
    """Rows that count how often they are read through."""

    passes = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        self.passes += 1
        return super().__iter__()


def test_a_page_of_thousands_of_stories_groups_its_outlets_in_one_pass() -> None:
    # given 5,000 stories, each covered from Germany (national, wire) and France, rows interleaved as SQL returns them
    shapes = (("DE", "national", 2), ("DE", "wire", 1), ("FR", "national", 3))
    rows = _Passes(OutletGroupRow(story, country, kind, [story * 10 + i], articles)
                   for i, (country, kind, articles) in enumerate(shapes) for story in range(STORIES))  # fmt: skip
    # when the page's perspectives are grouped, then the rows were read once and each story has its own three groups
    found = perspectives_by_story(rows, [*range(STORIES), STORIES])  # the last: a story no outlet covers
    assert rows.passes == 1
    story = found[4_321]
    assert [(g.country, g.kind, g.source_ids, g.articles) for g in story.by_country] == [
        ("DE", "", [43_210, 43_211], 3), ("FR", "", [43_212], 3)]  # fmt: skip
    assert [(g.kind, g.source_ids, g.articles) for g in story.by_kind] == [
        ("national", [43_210, 43_212], 5), ("wire", [43_211], 1)]  # fmt: skip
    assert all(len(found[s].groups) == 3 for s in range(STORIES))
    assert found[STORIES].groups == []


def _english_cities(how_many: int) -> list[str]:
    with gzip.open(COUNTRIES_FILE, "rt", encoding="utf-8") as rows:
        names = [line.split("\t")[1] for line in rows]
    return [n.title() for n in names if n.isalpha() and len(n) > 5][:how_many]


async def test_an_article_listing_5000_places_in_two_languages_stores_a_bounded_few(
    services: Services, settings: Settings
) -> None:
    # given a 100 KB English summary naming 5,000 cities and a German one naming 5,000 more (ten cities, over again)
    english = "; ".join(f"{city} reported damage" for city in _english_cities(STORIES))
    german = "; ".join(f"{GERMAN[i % len(GERMAN)]} meldet Schäden" for i in range(STORIES))
    assert min(len(english), len(german)) > 100_000
    source = await _source(services, settings)
    items = [Item("Storm damage reported across the region", "https://news.example/en", summary=english),
             Item("Sturmschäden in ganz Europa gemeldet", "https://news.example/de", summary=german)]  # fmt: skip
    # when they are ingested and understood
    outcome = await ingest_body(services.engine, settings, source, rss(items, link="https://news.example/"))
    await understand_articles(services.engine, outcome.new_article_ids, now=datetime.now(UTC))
    # then each stores a few places, the most named first, and as many entities as any article at most
    for article_id in outcome.new_article_ids:
        places = await count(services, "SELECT count(*) FROM article_places WHERE article_id = :a", a=article_id)
        assert 0 < places <= MAX_PLACES, article_id
        named = await count(services, "SELECT count(*) FROM article_entities WHERE article_id = :a", a=article_id)
        assert named <= MAX_ENTITIES
    # and the places repository caps what it is handed directly: 5,000 place entities store MAX_PLACES rows
    flood = [Entity(f"loc:{city.lower()}", city, "LOC", 1) for city in _english_cities(STORIES)]
    async with services.engine.begin() as connection:
        await connection.execute(text("DELETE FROM article_places"))
        await repository.save(connection, {outcome.new_article_ids[0]: flood})
    assert await count(services, "SELECT count(*) FROM article_places") == MAX_PLACES


async def _source(services: Services, settings: Settings) -> int:
    async with services.db.begin() as session:
        request = SourceRequest(
            feed_url="http://127.0.0.1:9/cities", name="Cities", country="GB", outlet_kind="national"
        )
        return (await create_source(session, settings, request)).id
