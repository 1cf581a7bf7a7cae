"""Feeds through the API: ranking, personalisation, snapshot-consistent pages, cursors, caching, topic and breaking
lists, and who may read what."""

from __future__ import annotations

import asyncio
import base64
from datetime import timedelta
from typing import Any

from app.feed.snapshots import forget_snapshots
from app.services import Services
from app.settings import Settings
from tests.conftest import GraphQLClient, count_queries, document
from tests.newsroom import StorySpec, add_source, add_story, global_id, sign_up


async def walk(gql: GraphQLClient, name: str = "Feed", first: int = 7, **variables: Any) -> list[dict[str, Any]]:
    """Every item of every page, in order."""
    items, after = [], None
    field = {"Feed": "feed", "TopicFeed": "topicFeed"}[name]
    while True:
        page = (await gql.run(name, first=first, after=after, **variables))[field]
        items += [edge["node"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return items
        after = page["pageInfo"]["endCursor"]


def titles(items: list[dict[str, Any]]) -> list[str]:
    return [item["story"]["title"] for item in items]


async def test_walking_the_pages_yields_every_story_once_while_news_arrives(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    outlets = [await add_source(services, settings, f"outlet{i}") for i in range(6)]
    for n in range(30):
        await add_story(services, StorySpec(f"Event number {n} happens", [outlets[n % 6], outlets[(n + 1) % 6]],
                                            age=timedelta(minutes=5 * n)))  # fmt: skip
    first = (await gql.run("Feed", first=10))["feed"]
    assert first["totalCount"] == 30
    seen = titles([e["node"] for e in first["edges"]])
    for n in range(5):  # news arrives between pages: fresher than anything listed
        await add_story(services, StorySpec(f"Late breaking item {n}", outlets[:5], breaking=True,
                                            age=timedelta(seconds=1)))  # fmt: skip
    after = first["pageInfo"]["endCursor"]
    while after:
        page = (await gql.run("Feed", first=10, after=after))["feed"]
        assert page["rankedAt"] == first["rankedAt"]
        seen += titles([e["node"] for e in page["edges"]])
        after = page["pageInfo"]["endCursor"] if page["pageInfo"]["hasNextPage"] else None
    assert len(seen) == len(set(seen)) == 30
    assert not any(t.startswith("Late") for t in seen)


async def test_at_most_two_stories_from_one_source_in_the_top_twenty(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    wire = await add_source(services, settings, "wire", authority=1.0)
    others = [await add_source(services, settings, f"local{i}", authority=0.2) for i in range(20)]
    for n in range(25):  # the wire leads the best covered, freshest stories
        await add_story(services, StorySpec(f"Wire report {n} on markets", [wire, *others[:4]],
                                            age=timedelta(minutes=n)))  # fmt: skip
    for n, source in enumerate(others):
        await add_story(services, StorySpec(f"Local item {n} about parks", [source], age=timedelta(hours=5)))
    items = await walk(gql, first=20)
    leads = [item["representative"]["source"]["name"] for item in items[:20]]
    assert leads.count("wire") == 2
    assert all(leads.count(name) <= 2 for name in leads)
    assert len(items) == 45  # the rest of the wire's stories follow below the top 20
    assert [item["representative"]["source"]["name"] for item in items[20:]].count("wire") == 23


async def test_signals_explain_the_order(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    outlets = [await add_source(services, settings, f"outlet{i}", authority=0.6) for i in range(5)]
    await add_story(services, StorySpec("Quake strikes the coast", outlets, breaking=True, age=timedelta(minutes=3)))
    await add_story(services, StorySpec("Study of coral reefs", outlets[:1], topics=["science"],
                                        age=timedelta(hours=30)))  # fmt: skip
    await add_story(services, StorySpec("Council approves budget", outlets[:2], age=timedelta(hours=30)))
    items = (await gql.run("Feed", first=10))["feed"]["edges"]
    by_title = {e["node"]["story"]["title"]: e["node"]["rankingSignals"] for e in items}
    quake, reefs, council = (by_title[t] for t in ("Quake strikes the coast", "Study of coral reefs",
                                                   "Council approves budget"))  # fmt: skip
    assert items[0]["node"]["story"]["title"] == "Quake strikes the coast"
    assert (quake["freshnessClass"], quake["breakingBoost"]) == ("BREAKING", 1.3)
    assert quake["quality"] == 0.6 + 0.6 * 0.4
    assert reefs["freshnessClass"] == "EVERGREEN"
    assert council["freshnessClass"] == "REGULAR"
    assert reefs["freshness"] > council["freshness"]  # the same age decays slower for an evergreen story
    assert abs(council["freshness"] - 2.718281828 ** (-0.1 * 30)) < 0.01
    assert all(s["readPenalty"] == 1.0 for s in by_title.values())


async def test_a_readers_feed_follows_their_interests_mutes_reads_and_languages(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    outlets = [await add_source(services, settings, f"outlet{i}", authority=0.5) for i in range(4)]
    muted = await add_source(services, settings, "tabloid", authority=0.9)
    french = await add_source(services, settings, "lemonde", language="fr")
    await add_story(services, StorySpec("Cup final goes to penalties", outlets[:1], topics=["sports"],
                                        age=timedelta(hours=2)))  # fmt: skip
    await add_story(services, StorySpec("Parliament votes on the bill", outlets, topics=["politics"]))
    await add_story(services, StorySpec("Tabloid scoop on the summit", [muted, outlets[1]], topics=["world"]))
    await add_story(services, StorySpec("Only the tabloid has this", [muted], topics=["world"]))
    await add_story(services, StorySpec("Le sommet commence", [french], languages=["fr"], topics=["world"]))
    anonymous = titles(await walk(gql))
    assert anonymous[0] == "Parliament votes on the bill"  # cold start: coverage and freshness
    assert len(anonymous) == 5

    reader = gql.as_(await sign_up(gql))
    assert titles(await walk(reader)) == anonymous  # no interests yet: the global ranking
    await reader.run("TopicFollow", topic="SPORTS")
    mute = await reader.post(document("SourceMute"), {"sourceId": global_id("Source", muted)})
    assert mute["data"]["sourceMute"]["errors"] == []
    await reader.run("PreferredLanguagesSet", languages=["en"])
    mine = await walk(reader)
    assert titles(mine)[0] == "Cup final goes to penalties"  # the followed topic, at once (cache invalidated)
    assert "Only the tabloid has this" not in titles(mine)
    assert "Le sommet commence" not in titles(mine)
    summit = next(item for item in mine if item["story"]["title"] == "Tabloid scoop on the summit")
    assert summit["representative"]["source"]["name"] == "outlet1"  # a stand-in for the muted lead
    assert titles(await walk(reader, languages=["fr"])) == ["Le sommet commence"]  # an explicit filter wins

    cup = mine[0]
    article = cup["representative"]["id"]
    recorded = await reader.run("EngagementRecord", articleId=article, action="READ", sessionId="s1", dwellMs=40_000)
    assert recorded["engagementRecord"]["errors"] == []
    after_reading = await walk(reader)
    read = next(item for item in after_reading if item["story"]["title"] == "Cup final goes to penalties")
    assert read["rankingSignals"]["readPenalty"] == 0.1
    assert titles(after_reading)[0] != "Cup final goes to penalties"
    others = await walk(gql)  # the read counts towards trending for everyone, but it is nobody else's read
    assert all(item["rankingSignals"]["readPenalty"] == 1.0 for item in others)


async def test_cursors_are_checked(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    outlet = await add_source(services, settings, "outlet")
    for n in range(4):
        await add_story(services, StorySpec(f"Story {n}", [outlet]))
    alice, bob = gql.as_(await sign_up(gql, "alice@example.com")), gql.as_(await sign_up(gql, "bob@example.com"))
    cursor = (await alice.run("Feed", first=1))["feed"]["pageInfo"]["endCursor"]
    assert (await alice.run("Feed", first=1, after=cursor))["feed"]["edges"]
    for caller, variables in ((bob, {}), (gql, {}), (alice, {"languages": ["fr"]})):
        refused = await caller.post(document("Feed"), {"first": 1, "after": cursor, **variables})
        assert refused["errors"][0]["extensions"]["code"] == "BAD_CURSOR", refused
    for bad in ("garbage", base64.urlsafe_b64encode(b'["feed","x",-1]').decode(), global_id("Story", 1)):
        answer = await alice.post(document("Feed"), {"after": bad})
        assert answer["errors"][0]["extensions"]["code"] == "BAD_CURSOR"
    await services.redis.flushdb()  # time passes: the ranking, its snapshot and every cached page expire
    forget_snapshots()
    expired = await alice.post(document("Feed"), {"first": 1, "after": cursor})
    assert expired["errors"][0]["extensions"]["code"] == "CURSOR_EXPIRED"
    oversized = await alice.post(document("Feed"), {"first": 10_000})
    assert oversized["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_a_cached_page_runs_no_sql_and_concurrent_misses_rank_once(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    outlets = [await add_source(services, settings, f"outlet{i}") for i in range(3)]
    for n in range(25):
        await add_story(services, StorySpec(f"Story {n}", outlets[: 1 + n % 3], age=timedelta(minutes=n)))
    before = services.cache.stats.computed
    pages = await asyncio.gather(*(gql.run("Feed", first=20) for _ in range(40)))
    assert services.cache.stats.computed - before == 2  # one ranking, one page of rows
    assert all(p == pages[0] for p in pages)
    with count_queries(services) as statements:
        again = await gql.run("Feed", first=20)
    assert statements == []
    assert again == pages[0]


async def test_topic_feeds_and_breaking(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    outlets = [await add_source(services, settings, f"outlet{i}") for i in range(5)]
    for n in range(6):
        await add_story(services, StorySpec(f"Match report {n}", outlets[: 1 + n % 5], topics=["sports"],
                                            age=timedelta(hours=n)))  # fmt: skip
    await add_story(services, StorySpec("Storm closes airports", outlets, breaking=True, age=timedelta(minutes=2)))
    ranked = await walk(gql, "TopicFeed", first=4, topic="SPORTS")
    assert sorted(titles(ranked)) == [f"Match report {n}" for n in range(6)]
    newest = await walk(gql, "TopicFeed", first=4, topic="SPORTS", sort="FRESHNESS")
    assert titles(newest) == [f"Match report {n}" for n in range(6)]
    assert all(item["rankingSignals"] is None for item in newest)
    breaking = (await gql.run("Breaking", first=5))["breaking"]["edges"]
    assert [e["node"]["title"] for e in breaking] == ["Storm closes airports"]
    cursor = (await gql.run("TopicFeed", topic="SPORTS", first=2))["topicFeed"]["pageInfo"]["endCursor"]
    foreign = await gql.post(document("TopicFeed"), {"topic": "WORLD", "after": cursor})
    assert foreign["errors"][0]["extensions"]["code"] == "BAD_CURSOR"


async def test_a_first_page_whose_snapshot_was_evicted_ranks_again(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    outlet = await add_source(services, settings, "outlet")
    await add_story(services, StorySpec("Only story", [outlet]))
    assert (await gql.run("Feed", first=1))["feed"]["totalCount"] == 1
    await services.redis.delete(*await services.redis.keys("newsagg:feed:snapshot:*"))  # evicted (memory pressure)
    await services.redis.delete(*await services.redis.keys("newsagg:cache:response:*"))
    forget_snapshots()
    assert (await gql.run("Feed", first=1))["feed"]["totalCount"] == 1  # the pointer outlived it: ranked afresh
