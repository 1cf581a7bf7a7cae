"""Places: outlets' countries and kinds (inferred, from OPML, set by an administrator), the places articles name,
region feeds and trending, the home region and its cold start, and perspectives in full coverage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.trending import cache_key
from app.articles.understanding import understand_articles
from app.db.migrate import upgrade
from app.ingest.refresh import ingest_body
from app.places.gazetteer import Place, resolve
from app.places.outlets import Outlet, OutletKind, infer
from app.services import Services
from app.settings import Settings
from app.sources.opml import read_opml
from app.sources.service import SourceRequest, create_source
from app.trending.service import trending_page
from app.trending.store import record_arrivals
from app.trending.windows import TrendingWindow
from tests.conftest import GraphQLClient, statements_per_page
from tests.feeds import Item, rss
from tests.newsroom import administrator, global_id, sign_up
from tests.places_newsroom import add_local_story, add_outlets


def test_an_outlet_is_placed_by_its_domain_a_list_of_known_outlets_then_its_language() -> None:
    assert infer("https://www.bbc.co.uk/news", None, "en") == Outlet("GB", OutletKind.NATIONAL)
    assert infer(None, "https://feeds.reuters.com/world", None) == Outlet("GB", OutletKind.WIRE)
    assert infer("https://apnews.com/", None, "en") == Outlet("US", OutletKind.WIRE)
    assert infer("https://www.spiegel.de/", None, "de") == Outlet("DE", OutletKind.UNKNOWN)
    assert infer("https://www.independent.co.uk/", None, None).country == "GB"
    assert infer("https://www.lemonde.fr/", None, "fr") == Outlet("FR", OutletKind.UNKNOWN)
    assert infer("https://www.asahi.com/", None, "ja") == Outlet("JP", OutletKind.UNKNOWN)  # language: weak
    assert infer("https://example.com/", None, "en") == Outlet(None, OutletKind.UNKNOWN)  # English: many countries
    assert infer("https://news.example.tv/", None, None).country is None  # .tv is sold as a word
    assert infer("not a url \x00", "http://[::1", None) == Outlet(None, OutletKind.UNKNOWN)


def test_places_resolve_to_countries_and_regions_in_any_language() -> None:
    assert resolve("Paris") == Place("FR", None)
    assert resolve("München") == Place("DE", None)
    assert resolve("Londres") == Place("GB", "GB-ENG")
    assert resolve("Texas") == Place("US", "US-TX")
    assert resolve("U.S.") == Place("US", None)
    assert resolve("Europe") is None  # a continent is no country


async def _outlet(gql: GraphQLClient, source_id: int) -> dict[str, Any]:
    query = "query($id: ID!) { node(id: $id) { ... on Source { country outletKind outletInferred } } }"
    body = await gql.post(query, {"id": global_id("Source", source_id)})
    return dict(body["data"]["node"])


async def test_administrators_set_an_outlets_group_and_inference_never_replaces_it(
    gql: GraphQLClient, services: Services, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    outlets = await add_outlets(services, settings)
    tagesschau = outlets["Tagesschau"]
    assert await _outlet(gql, tagesschau) == {"country": "DE", "outletKind": "UNKNOWN", "outletInferred": True}
    admin = await administrator(gql, services)
    source_id = global_id("Source", tagesschau)
    changed = (await admin.run("SourceUpdate", id=source_id, input={"outletKind": "NATIONAL"}))["sourceUpdate"]
    assert changed["errors"] == []
    assert {"country": "DE", "outletKind": "NATIONAL", "outletInferred": False}.items() <= changed["source"].items()
    # a new site URL moves an inferred outlet, never an administrator's
    await admin.run("SourceUpdate", id=source_id, input={"siteUrl": "https://www.tagesschau.at/"})
    assert await _outlet(gql, tagesschau) == {"country": "DE", "outletKind": "NATIONAL", "outletInferred": False}
    bbc = global_id("Source", outlets["BBC News"])
    await admin.run("SourceUpdate", id=bbc, input={"siteUrl": "https://www.rte.ie/"})
    assert (await _outlet(gql, outlets["BBC News"]))["country"] == "IE"
    refused = (await admin.run("SourceUpdate", id=source_id, input={"country": "UK"}))["sourceUpdate"]
    assert [(e["code"], e["field"]) for e in refused["errors"]] == [("INVALID_REGION", "country")]
    hostile = (await admin.run("SourceUpdate", id=source_id, input={"country": "🇩🇪" * 50_000}))["sourceUpdate"]
    assert [(e["code"], e["field"]) for e in hostile["errors"]] == [("INVALID_REGION", "country")]
    back = (await admin.run("SourceUpdate", id=source_id, input={"country": ""}))["sourceUpdate"]["source"]
    assert (back["country"], back["outletInferred"]) == ("AT", True)  # handed back: inferred from the new site
    monkeypatch.setattr(services.settings, "open_source_admin", True)  # anyone manages sources; not outlets
    reader = gql.as_(await sign_up(gql))
    forbidden = (await reader.run("SourceUpdate", id=source_id, input={"country": "FR"}))["sourceUpdate"]
    assert [(e["code"], e["field"]) for e in forbidden["errors"]] == [("FORBIDDEN", "country")]


OPML = b"""<?xml version="1.0"?>
<opml version="2.0"><head><title>t</title></head><body>
  <outline text="Wire" xmlUrl="http://127.0.0.1:9/wire" country="fr" outletKind="wire"/>
  <outline text="Local" xmlUrl="http://127.0.0.1:9/local" htmlUrl="https://www.manchestereveningnews.co.uk/"
           outletKind="local"/>
  <outline text="Nowhere" xmlUrl="http://127.0.0.1:9/nowhere" country="Atlantis" outletKind="pirate"/>
</body></opml>"""


async def test_opml_carries_an_outlets_country_and_kind_in_and_out(gql: GraphQLClient, services: Services) -> None:
    admin = await administrator(gql, services)
    assert (await admin.run("SourcesImport", opml=OPML.decode()))["sourcesImport"]["errors"] == []
    query = "{ sources(first: 10) { edges { node { name country outletKind outletInferred } } } }"
    found = {e["node"]["name"]: e["node"] for e in (await gql.post(query))["data"]["sources"]["edges"]}
    assert {"country": "FR", "outletKind": "WIRE", "outletInferred": False}.items() <= found["Wire"].items()
    assert {"country": "GB", "outletKind": "LOCAL", "outletInferred": False}.items() <= found["Local"].items()
    assert {"country": None, "outletKind": "UNKNOWN", "outletInferred": True}.items() <= found["Nowhere"].items()
    exported = {f.title: f for f in read_opml((await gql.run("SourcesOpml"))["sourcesOpml"].encode())}
    assert (exported["Wire"].country, exported["Wire"].outlet_kind) == ("FR", "wire")
    assert (exported["Local"].country, exported["Local"].outlet_kind) == ("GB", "local")
    assert (exported["Nowhere"].country, exported["Nowhere"].outlet_kind) == (None, None)  # inferred: not exported


async def test_articles_and_stories_name_their_places_by_country(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    outlets = await add_outlets(services, settings)
    paris = await add_local_story(services, outlets, "paris", age=timedelta(hours=1))
    california = await add_local_story(services, outlets, "california", age=timedelta(hours=1))
    body = await gql.run("StoryPerspectives", id=global_id("Story", paris))
    places = [(p["country"], p["region"], p["mentions"]) for p in body["story"]["places"]]
    assert places == [("FR", None, 2)]  # Paris in both, Lyon in one: two articles name France
    assert body["story"]["places"][0]["countryName"] == "France"
    assert [(p["name"], p["country"]) for p in body["story"]["representative"]["places"]] == [("Paris", "FR")]
    body = await gql.run("StoryPerspectives", id=global_id("Story", california))
    places = [(p["country"], p["region"], p["mentions"]) for p in body["story"]["places"]]
    assert places == [("US", None, 3), ("US", "US-CA", 3)]
    async with services.db() as session:
        stored = await session.scalar(text("SELECT count(*) FROM article_places"))
    assert stored == 8  # a row per article and place: Paris 2, Lyon 1, California 3, Los Angeles 2


async def test_coverage_is_grouped_by_outlet_country_and_kind(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    outlets = await add_outlets(services, settings)
    berlin = await add_local_story(services, outlets, "berlin", age=timedelta(hours=1))
    perspectives = (await gql.run("StoryPerspectives", id=global_id("Story", berlin)))["story"]["perspectives"]
    assert perspectives["outletCount"] == 3
    assert [(g["country"], g["outletCount"], g["articleCount"]) for g in perspectives["byCountry"]] == [
        ("DE", 2, 2), ("GB", 1, 1)]  # fmt: skip
    assert [(g["outletKind"], g["outletCount"]) for g in perspectives["byKind"]] == [("UNKNOWN", 2), ("WIRE", 1)]
    groups = [(g["country"], g["outletKind"], sorted(s["name"] for s in g["sources"])) for g in perspectives["groups"]]
    assert groups == [("DE", "UNKNOWN", ["Süddeutsche", "Tagesschau"]), ("GB", "WIRE", ["Reuters"])]
    admin = await administrator(gql, services)
    await admin.run("SourceUpdate", id=global_id("Source", outlets["Tagesschau"]), input={"outletKind": "NATIONAL"})
    perspectives = (await gql.run("StoryPerspectives", id=global_id("Story", berlin)))["story"]["perspectives"]
    assert sorted((g["country"], g["outletKind"]) for g in perspectives["groups"]) == [
        ("DE", "NATIONAL"), ("DE", "UNKNOWN"), ("GB", "WIRE")]  # fmt: skip


async def _feed(gql: GraphQLClient, **variables: Any) -> list[str]:
    edges = (await gql.run("Feed", first=10, **variables))["feed"]["edges"]
    return [e["node"]["story"]["title"] for e in edges]


async def _newsroom(services: Services, settings: Settings) -> dict[str, int]:
    """Five stories: California's the most covered and freshest, Berlin's an hour older, Leeds's the oldest."""
    outlets = await add_outlets(services, settings)
    ages = {"california": 0.2, "valencia": 0.5, "paris": 0.6, "berlin": 1.5, "leeds": 3.0}
    return {key: await add_local_story(services, outlets, key, age=timedelta(hours=h)) for key, h in ages.items()}


async def test_a_region_feed_puts_that_regions_stories_first(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    stories = await _newsroom(services, settings)
    everywhere = await _feed(gql)
    assert everywhere[0] == "Wildfire forces thousands to flee in California"
    german = await _feed(gql, region="de")
    assert german[0] == "Stromausfall legt Teile von Berlin lahm"  # about Berlin, by German outlets
    assert german != everywhere
    assert sorted(german) == sorted(everywhere)  # preferred, not filtered
    british = (await gql.run("Feed", first=10, region="GB"))["feed"]["edges"]
    # Leeds (about Britain, by British outlets) leads; Berlin and California have a British wire among 3 outlets
    locality = {e["node"]["story"]["id"]: round(e["node"]["rankingSignals"]["locality"], 4) for e in british}
    assert locality == {
        global_id("Story", stories[k]): v
        for k, v in {"leeds": 1.0, "berlin": 0.1667, "california": 0.1667, "paris": 0.0, "valencia": 0.0}.items()
    }
    assert british[0]["node"]["story"]["id"] == global_id("Story", stories["leeds"])
    for bad in ("XX", "UK", "England", "", "D" * 100_000, "🇩🇪", "d\u0435"):  # the last with a Cyrillic e
        body = await gql.post(
            "query($r: String) { feed(region: $r) { totalCount } trending(region: $r) { score } }", {"r": bad}
        )
        assert body.get("data") is None
        assert body["errors"][0]["extensions"]["code"] == "INVALID_REGION", body


async def test_trending_of_a_region_keeps_its_stories(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    stories = await _newsroom(services, settings)
    now = datetime.now(UTC)
    await record_arrivals(services.redis, {n: story for story in stories.values() for n in range(story * 10,
                                                                                                   story * 10 + 3)},
                          now)  # fmt: skip
    everywhere = (await gql.run("Trending", first=10))["trending"]
    assert len(everywhere) == 5
    french = (await gql.run("Trending", first=10, region="FR"))["trending"]
    assert [t["story"]["id"] for t in french] == [global_id("Story", stories["paris"])]
    spanish = (await gql.run("Trending", first=10, region="es"))["trending"]
    assert [t["story"]["id"] for t in spanish] == [global_id("Story", stories["valencia"])]
    await services.cache.delete(cache_key(TrendingWindow.HOUR, "FR"))


async def test_the_trending_service_hands_a_finished_page_of_a_regions_stories(
    services: Services, settings: Settings
) -> None:
    # given the five stories trending, Leeds's most (5 arrivals) down to Valencia's least (1)
    stories = await _newsroom(services, settings)
    arrivals = dict(zip(("leeds", "berlin", "california", "paris", "valencia"), range(5, 0, -1), strict=True))
    now = datetime.now(UTC)
    await record_arrivals(services.redis, {stories[key] * 10 + n: stories[key] for key, many in arrivals.items()
                                           for n in range(many)}, now)  # fmt: skip
    # when the service is asked for pages, then they hold the region's stories only (about it or covered from it),
    # best first, cut to the size asked
    async with services.db() as session:
        british = await trending_page(session, services.redis, TrendingWindow.HOUR, "GB", 2, now)
        everywhere = await trending_page(session, services.redis, TrendingWindow.HOUR, None, 10, now)
    assert [t.story_id for t in british] == [stories["leeds"], stories["berlin"]]
    assert [(t.story_id, t.arrivals) for t in everywhere] == [(stories[k], many) for k, many in arrivals.items()]


async def test_a_home_region_leads_a_new_readers_feed_then_lifts_local_stories(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    stories = await _newsroom(services, settings)
    reader = gql.as_(await sign_up(gql))
    assert (await _feed(reader))[0] == "Wildfire forces thousands to flee in California"
    # refused in the payload, as other account mutations refuse, and nothing changed
    for bad in ("Narnia", "UK", "", "D E", "\u0110E", "\U0001f1e9\U0001f1ea", "DE" * 5_000):
        refused = (await reader.run("HomeRegionSet", region=bad))["homeRegionSet"]
        assert (refused["viewer"], [(e["code"], e["field"]) for e in refused["errors"]]) == (
            None, [("INVALID_REGION", "region")]), refused  # fmt: skip
    unchanged = await reader.post("{ viewer { homeRegion } }")
    assert unchanged["data"]["viewer"]["homeRegion"] is None
    set_ = (await reader.run("HomeRegionSet", region="es"))["homeRegionSet"]
    assert set_["viewer"]["homeRegion"] == "ES"
    cold = (await reader.run("Feed", first=10))["feed"]["edges"]
    assert cold[0]["node"]["story"]["id"] == global_id("Story", stories["valencia"])  # the location cold start
    await reader.run("TopicFollow", topic="WORLD")  # interests of their own: the home region only lifts
    warm = (await reader.run("Feed", first=10))["feed"]["edges"]
    signals = {e["node"]["story"]["id"]: e["node"]["rankingSignals"] for e in warm}
    valencia = signals[global_id("Story", stories["valencia"])]
    assert valencia["locality"] == 0.75  # about Spain; one of its two outlets is Spanish
    assert valencia["relevance"] > 0
    assert (await reader.run("HomeRegionSet", region=None))["homeRegionSet"]["viewer"]["homeRegion"] is None
    assert (await _feed(reader))[0] == "Wildfire forces thousands to flee in California"


async def test_ingest_places_an_outlet_by_its_feeds_link_and_stores_the_places_its_articles_name(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    async with services.db.begin() as session:
        herald = (await create_source(session, settings, SourceRequest(feed_url="http://127.0.0.1:9/herald"))).id
        wire = (await create_source(session, settings, SourceRequest(feed_url="http://127.0.0.1:9/wire",
                                                                     country="FR", outlet_kind="wire"))).id  # fmt: skip
    assert await _outlet(gql, herald) == {"country": None, "outletKind": "UNKNOWN", "outletInferred": True}
    for source_id in (herald, wire):
        items = [Item("Earthquake shakes Wellington", f"https://news.example/{source_id}",
                      summary="A strong earthquake was felt across Wellington and Auckland on Tuesday.")]  # fmt: skip
        outcome = await ingest_body(
            services.engine, settings, source_id, rss(items, link="https://www.nzherald.co.nz/")
        )
        await understand_articles(services.engine, outcome.new_article_ids, now=datetime.now(UTC))
    assert await _outlet(gql, herald) == {"country": "NZ", "outletKind": "NATIONAL", "outletInferred": True}
    assert await _outlet(gql, wire) == {"country": "FR", "outletKind": "WIRE", "outletInferred": False}
    query = "{ articles(first: 5) { edges { node { places { name country } } } } }"
    found = [e["node"]["places"] for e in (await gql.post(query))["data"]["articles"]["edges"]]
    assert found == [[{"name": "Wellington", "country": "NZ"}, {"name": "Auckland", "country": "NZ"}]] * 2


async def test_administrators_place_a_new_outlet_and_places_cost_no_n_plus_one(
    gql: GraphQLClient, services: Services, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = await administrator(gql, services)
    made = await admin.run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/otago", "country": "nz",
                                                  "outletKind": "LOCAL"})  # fmt: skip
    source = made["sourceCreate"]["source"]
    assert (source["country"], source["outletKind"], source["outletInferred"]) == ("NZ", "LOCAL", False)
    monkeypatch.setattr(services.settings, "open_source_admin", True)  # the session's settings: undone after
    reader = gql.as_(await sign_up(gql))
    refused = await reader.run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/x", "outletKind": "WIRE"})
    assert [(e["code"], e["field"]) for e in refused["sourceCreate"]["errors"]] == [("FORBIDDEN", "outletKind")]
    await _newsroom(services, settings)
    query = """query($n: Int) { stories(first: $n) { edges { node { places { country region mentions }
        perspectives { groups { country outletKind sources { name } } byKind { outletKind } }
        representative { places { name } } } } } }"""
    assert await statements_per_page(gql, services, query, (1, 5)) == [6, 6]


def test_a_name_many_places_share_is_read_in_the_light_of_the_text_and_the_outlet() -> None:
    assert resolve("Valencia") == Place("VE", None)  # Venezuela's Valencia is the larger city
    assert resolve("Valencia", {"ES"}) == Place("ES", None)
    assert resolve("Georgia") == Place("GE", None)
    assert resolve("Georgia", {"US"}) == Place("US", "US-GA")
    assert resolve("Paris", {"US"}) == Place("FR", None)  # no Paris in the US is large enough to be listed


async def test_the_migration_places_stored_outlets_and_the_places_of_stored_articles(
    scratch_engine: AsyncEngine,
) -> None:
    await upgrade(scratch_engine, "0022")
    async with scratch_engine.begin() as connection:
        for n, (site, language) in enumerate(
            [("https://www.abc.es/", "es"), (None, "ja"), ("https://x.example/", "en")]
        ):
            await connection.execute(
                text(
                    "INSERT INTO sources (id, feed_url, site_url, name, kind, language, min_interval_s, "
                    "max_interval_s, status) VALUES (:id, :feed, :site, :name, 'rss', :language, 60, 900, 'active')"
                ),
                {"id": n + 1, "feed": f"http://127.0.0.1:9/{n}", "site": site, "name": f"s{n}", "language": language},
            )
            await connection.execute(text(
                "INSERT INTO articles (id, source_id, external_id, url, title, summary, published_at, content_hash) "
                "VALUES (:id, :id, :external, :url, 'Fire near Valencia', '', now(), 0)"),
                {"id": n + 1, "external": str(n + 1), "url": f"https://news.example/{n}"})  # fmt: skip
            await connection.execute(text(
                "INSERT INTO article_entities (article_id, key, name, kind, mentions, seen_at) "
                "VALUES (:id, 'loc:valencia', 'Valencia', 'LOC', 1, now())"), {"id": n + 1})  # fmt: skip
    await upgrade(scratch_engine)
    async with scratch_engine.connect() as connection:
        outlets = (await connection.execute(text("SELECT country, outlet_kind, outlet_inferred FROM sources "
                                                 "ORDER BY id"))).all()  # fmt: skip
        places = (await connection.execute(text("SELECT article_id, country FROM article_places ORDER BY 1"))).all()
    assert [tuple(o) for o in outlets] == [("ES", "unknown", True), ("JP", "unknown", True), (None, "unknown", True)]
    assert [tuple(p) for p in places] == [(1, "ES"), (2, "VE"), (3, "VE")]  # a Spanish outlet's Valencia is Spain's
