"""A story's full coverage: outlets by authority, copies folded under their original, cursors, and no N+1."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from app.articles.models import Article
from app.articles.repository import NewArticle, insert_new
from app.articles.understanding import understand_articles
from app.services import Services
from app.settings import Settings
from app.stories.coverage import coverage_pages
from app.stories.repository import CoverageRequest
from app.stories.service import cluster_articles
from tests.conftest import GraphQLClient, count_queries, document
from tests.newsroom import add_source
from tests.test_stories_ingest import APPLE, FED, stored

T0 = datetime.now(UTC).replace(microsecond=0)


async def outlets(services: Services, settings: Settings, **authorities: float) -> dict[str, int]:
    """One source per name, with that authority and no declared language, created in the order given."""
    return {name: await add_source(services, settings, name, authority, language=None)
            for name, authority in authorities.items()}  # fmt: skip


async def publish(services: Services, *articles: tuple[int, str, str, int]) -> list[int]:
    """(source id, title, summary, seconds after T0) -> article ids, inserted one by one in the order given."""
    ids = []
    async with services.db.begin() as session:
        for n, (source_id, title, summary, seconds) in enumerate(articles):
            new = NewArticle(source_id, f"x{n}", f"https://news.example/{n}", title, summary, None,
                             T0 + timedelta(seconds=seconds), n)  # fmt: skip
            ids += [a.id for a in await insert_new(session, [new])]
    return ids


async def story_ids(gql: GraphQLClient) -> dict[str, str]:
    """Story title -> global id."""
    edges = (await gql.run("Stories", first=50, coverage=0))["stories"]["edges"]
    return {edge["node"]["title"]: edge["node"]["id"] for edge in edges}


async def coverage(gql: GraphQLClient, story_id: str, **variables: Any) -> dict[str, Any]:
    connection: dict[str, Any] = (await gql.run("StoryCoverage", id=story_id, **variables))["story"]["coverage"]
    return connection


def outline(connection: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(outlet, its articles' titles) for each group."""
    return [(edge["node"]["source"]["name"], [item["article"]["title"] for item in edge["node"]["articles"]])
            for edge in connection["edges"]]  # fmt: skip


async def test_groups_by_outlet_in_order_of_authority(gql: GraphQLClient, services: Services,
                                                      settings: Settings) -> None:  # fmt: skip
    """Given four outlets (two with equal authority) and another story, when the coverage is read, then each outlet
    is one group, most authoritative first, ties broken by who reported first, articles earliest first."""
    o = await outlets(services, settings, Wire=0.9, Daily=0.5, Times=0.5, Blog=0.2)
    ids = await publish(services, (o["Blog"], APPLE[1], "", 0), (o["Times"], APPLE[2], "", 1),
                        (o["Daily"], APPLE[0], "", 5), (o["Daily"], APPLE[1], "", 2), (o["Wire"], APPLE[0], "", 3),
                        (o["Wire"], FED[0], "", 4))  # fmt: skip
    await cluster_articles(services.engine, ids)
    connection = await coverage(gql, (await story_ids(gql))[APPLE[0]])
    assert outline(connection) == [("Wire", [APPLE[0]]), ("Times", [APPLE[2]]), ("Daily", [APPLE[1], APPLE[0]]),
                                   ("Blog", [APPLE[1]])]  # fmt: skip
    assert connection["totalCount"] == 4
    assert connection["pageInfo"]["hasNextPage"] is False
    items = [item for edge in connection["edges"] for item in edge["node"]["articles"]]
    assert {(item["copyCount"], len(item["copies"])) for item in items} == {(0, 0)}


async def test_copies_fold_under_their_original_whatever_the_outlet(gql: GraphQLClient, services: Services,
                                                                    settings: Settings) -> None:  # fmt: skip
    """Given a wire story re-run by two other outlets and re-posted by the wire itself, when the coverage is read,
    then it is listed once with its three copies (each showing its outlet), and an outlet that only re-ran it has no
    group of its own; page by page, the copy is never listed under the outlet that ran it."""
    o = await outlets(services, settings, Wire=0.9, Daily=0.5, Blog=0.2)
    ids = await publish(
        services,
        (o["Wire"], APPLE[0], "", 0),
        (o["Daily"], APPLE[2], "", 1),
        (o["Daily"], APPLE[0], "", 2),
        (o["Wire"], APPLE[0], "", 3),
        (o["Blog"], APPLE[0], "", 4),
    )
    assert await understand_articles(services.engine, ids, now=datetime.now(UTC)) == {
        ids[2]: ids[0], ids[3]: ids[0], ids[4]: ids[0]}  # fmt: skip
    await cluster_articles(services.engine, ids)
    story = (await gql.run("StoryCoverage", id=(await story_ids(gql))[APPLE[0]]))["story"]
    assert (story["sourceCount"], story["articleCount"]) == (3, 5)
    connection = story["coverage"]
    assert outline(connection) == [("Wire", [APPLE[0]]), ("Daily", [APPLE[2]])]
    assert connection["totalCount"] == 2
    [wire_story] = connection["edges"][0]["node"]["articles"]
    assert wire_story["copyCount"] == 3
    assert [copy["source"]["name"] for copy in wire_story["copies"]] == ["Daily", "Wire", "Blog"]
    assert connection["edges"][1]["node"]["articles"][0]["copies"] == []
    first = await coverage(gql, story["id"], first=1)
    second = await coverage(gql, story["id"], first=1, after=first["pageInfo"]["endCursor"])
    assert (outline(first), outline(second)) == ([("Wire", [APPLE[0]])], [("Daily", [APPLE[2]])])
    assert first["edges"][0]["node"]["articles"][0]["copyCount"] == 3


async def wire_story_copied_seven_times(services: Services, settings: Settings) -> list[int]:
    """Wire's story (the original) re-run seven times by Daily, Blog and Wire itself, and Daily's two own articles;
    clustered into one story. Returns the ids in the order published."""
    o = await outlets(services, settings, Wire=0.9, Daily=0.5, Blog=0.2)
    reruns = [(o[name], APPLE[0], "", 3 + k) for k, name in enumerate(["Daily", "Blog", "Wire"] * 2 + ["Blog"])]
    ids = await publish(services, (o["Wire"], APPLE[0], "", 0), (o["Daily"], APPLE[1], "", 1),
                        (o["Daily"], APPLE[2], "", 2), *reruns)  # fmt: skip
    assert await understand_articles(services.engine, ids, now=datetime.now(UTC)) == dict.fromkeys(ids[3:], ids[0])
    await cluster_articles(services.engine, ids)
    return ids


SIZED = """query($id: ID!, $articles: Int) {
        story(id: $id) { coverage { edges { node { source { name } ...Outlet } } } } }
    fragment Outlet on CoverageGroup { articleCount articles(first: $articles) { article { title } copyCount
        ... on CoverageArticle { copies(first: 2) { publishedAt } } } }"""


async def test_an_outlet_s_articles_and_an_article_s_copies_come_a_few_at_a_time(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    """Given a story whose wire article has seven copies and whose Daily outlet has two articles of its own, when its
    coverage is read, then an article lists its first 5 copies by default (`first` to ask for more or fewer) and an
    outlet its first `first` articles, while `copyCount` and `articleCount` count them all."""
    ids = await wire_story_copied_seven_times(services, settings)
    story_id = (await story_ids(gql))[APPLE[0]]
    connection = await coverage(gql, story_id)
    assert outline(connection) == [("Wire", [APPLE[0]]), ("Daily", [APPLE[1], APPLE[2]])]
    [wire_story] = connection["edges"][0]["node"]["articles"]
    assert (wire_story["copyCount"], len(wire_story["copies"])) == (7, 5)
    assert [c["publishedAt"] for c in wire_story["copies"]] == [(T0 + timedelta(seconds=3 + k)).isoformat()
                                                                 for k in range(5)]  # fmt: skip
    sized = (await gql.post(SIZED, {"id": story_id, "articles": 1}))["data"]["story"]["coverage"]["edges"]
    wire, daily = (edge["node"] for edge in sized)
    assert (wire["articleCount"], daily["articleCount"]) == (1, 2)
    assert [item["article"]["title"] for item in daily["articles"]] == [APPLE[1]]
    assert (wire["articles"][0]["copyCount"], len(wire["articles"][0]["copies"])) == (7, 2)
    assert len(ids) == 10


async def test_a_page_holds_only_the_articles_and_copies_asked_for(services: Services, settings: Settings) -> None:
    """Given the same story, when a page asks for one article per outlet and three copies per article, then that is
    all the page holds (the statement reads no more), with every copy and article counted."""
    ids = await wire_story_copied_seven_times(services, settings)
    async with services.db() as session:
        story_id = (await session.get(Article, ids[0])).cluster_id  # type: ignore[union-attr]
        [page], sources = await coverage_pages(session, [CoverageRequest(story_id, 5, articles=1, copies=3)])
        [none], _ = await coverage_pages(session, [CoverageRequest(story_id, 5, articles=0, copies=0)])
    wire, daily = page.groups
    assert [(g.article_count, len(g.items)) for g in page.groups] == [(1, 1), (2, 1)]
    assert (wire.items[0].copy_count, [c.id for c in wire.items[0].copies]) == (7, ids[3:6])
    assert (daily.items[0].article.id, daily.items[0].copies) == (ids[1], [])
    assert {s.name for s in sources} == {"Wire", "Daily", "Blog"}
    assert [(g.article_count, g.items) for g in none.groups] == [(1, []), (2, [])]


async def test_pages_walk_every_group_once(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    """Given 13 outlets (the three top ones tied on authority), when the coverage is walked two groups at a time,
    then every group comes once, in the order of one big page."""
    await cluster_articles(services.engine, await stored(services, settings, [APPLE[0]] * 13))
    story_id = (await story_ids(gql))[APPLE[0]]
    whole = outline(await coverage(gql, story_id, first=100))
    assert [name for name, _ in whole] == [f"Outlet {k}" for k in (10, 11, 12, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)]
    walked: list[tuple[str, list[str]]] = []
    after = None
    while True:
        page = await coverage(gql, story_id, first=2, after=after)
        assert page["totalCount"] == 13
        assert page["pageInfo"]["hasPreviousPage"] == (after is not None)
        walked += outline(page)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert walked == whole
    empty = await coverage(gql, story_id, first=0)
    assert (empty["edges"], empty["pageInfo"]["hasNextPage"], empty["totalCount"]) == ([], True, 13)


def _cursor(*parts: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(parts)).encode()).decode().rstrip("=")


async def test_bad_and_foreign_cursors_are_typed_errors(gql: GraphQLClient, services: Services,
                                                        settings: Settings) -> None:  # fmt: skip
    """A cursor from another story's coverage, from another connection, or anything not issued: BAD_CURSOR."""
    ids = await stored(services, settings, [APPLE[0], APPLE[1], FED[0], FED[1]])
    await cluster_articles(services.engine, ids)
    stories = await story_ids(gql)
    apple, fed = stories[APPLE[1]], stories[FED[1]]
    apple_cursor = (await coverage(gql, apple, first=1))["pageInfo"]["endCursor"]
    assert (await coverage(gql, apple, first=1, after=apple_cursor))["edges"]
    stories_cursor = (await gql.run("Stories", first=1))["stories"]["pageInfo"]["endCursor"]
    apple_number = int(base64.b64decode(apple).decode().split(":")[1])
    for cursor in [
        apple_cursor,  # another story's
        stories_cursor,  # another connection's
        "garbage", "%%%", "",
        _cursor("coverage", apple_number, 0.5, T0.isoformat()),  # too short
        _cursor("coverage", "1", 0.5, T0.isoformat(), 1),
        _cursor("coverage", apple_number, "high", T0.isoformat(), 1),
        _cursor("coverage", apple_number, float("nan"), T0.isoformat(), 1),
        _cursor("coverage", apple_number, 0.5, "yesterday", 1),
        _cursor("coverage", apple_number, 0.5, "2026-01-01T00:00:00", 1),  # no time zone
        _cursor("coverage", apple_number, 0.5, T0.isoformat(), True),
        _cursor("coverage", apple_number, 0.5, "0001-01-01T00:00:00+05:00", 1),  # before year 1 in UTC
        _cursor("coverage", apple_number, 0.5, "9999-12-31T23:00:00-05:00", 1),  # after year 9999 in UTC
    ]:  # fmt: skip
        story = fed if cursor == apple_cursor else apple
        body = await gql.post(document("StoryCoverage"), {"id": story, "after": cursor})
        assert body["errors"][0]["extensions"]["code"] == "BAD_CURSOR", cursor
    too_many = await gql.post(document("StoryCoverage"), {"id": apple, "first": settings.page_size_max + 1})
    assert too_many["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


TWO_COVERAGES = """query($a: ID!, $b: ID!, $after: String) {
    a: story(id: $a) { coverage(first: 1, after: $after) { totalCount } }
    b: story(id: $b) { coverage(first: 1) { totalCount edges { node { source { name } } } } } }"""


async def test_a_cursor_out_of_the_database_s_range_spoils_no_other_story_s_coverage(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    """Given two stories asked for in one request, when one's coverage gets a forged cursor whose moment is out of
    range in UTC, then that field alone is BAD_CURSOR and the other story's coverage comes (their pages load as one
    batch)."""
    ids = await stored(services, settings, [APPLE[0], APPLE[1], FED[0], FED[1]])
    await cluster_articles(services.engine, ids)
    stories = await story_ids(gql)
    apple, fed = stories[APPLE[1]], stories[FED[1]]
    apple_number = int(base64.b64decode(apple).decode().split(":")[1])
    forged = _cursor("coverage", apple_number, 0.5, "0001-01-01T00:00:00+05:00", 1)
    body = await gql.post(TWO_COVERAGES, {"a": apple, "b": fed, "after": forged})
    assert [(e["path"], e["extensions"]["code"]) for e in body["errors"]] == [(["a", "coverage"], "BAD_CURSOR")]
    assert body["data"]["b"]["coverage"]["totalCount"] >= 1


FEED = """query($n: Int) { stories(first: $n) { edges { node { title representative { title source { name } }
    coverage(first: 3) { totalCount edges { node { source { name } articles { article { title source { name } }
    copyCount copies { source { name } } } } } } } } } }"""
LEGACY = "query($n: Int) { stories(first: $n) { edges { node { articles(first: 2) { title source { name } } } } } }"


async def test_a_feed_of_stories_with_coverage_costs_the_same_statements_for_5_or_20(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    """Given 20 stories, each covered by four outlets and re-run by a fifth, when a feed of 5 and then of 20 stories
    asks for each story's representative and a 3-outlet coverage preview, then both take the same few statements."""
    o = await outlets(services, settings, Wire=0.9, Daily=0.7, Times=0.5, Blog=0.3, Reruns=0.1)
    articles = []
    for k in range(20):
        words = f"Zephyr{k} quarry{k} lantern{k} harbour{k}"
        articles += [(o["Wire"], f"{words} wire", f"Wire desk {k} reports the lantern{k} news.", k),
                     (o["Daily"], f"{words} daily", "", k), (o["Times"], f"{words} times", "", k),
                     (o["Blog"], f"{words} blog", "", k),
                     (o["Reruns"], f"{words} wire", f"Wire desk {k} reports the lantern{k} news.", k)]  # fmt: skip
    ids = await publish(services, *articles)
    await understand_articles(services.engine, ids, now=datetime.now(UTC))
    await cluster_articles(services.engine, ids)
    counts = {}
    for n in (5, 20):
        with count_queries(services) as statements:
            body = await gql.post(FEED, {"n": n})
        assert not body.get("errors"), body["errors"]
        cards = [edge["node"] for edge in body["data"]["stories"]["edges"]]
        assert len(cards) == n
        for card in cards:
            assert card["representative"]["source"]["name"] == "Wire"
            assert card["coverage"]["totalCount"] == 4
            assert [e["node"]["source"]["name"] for e in card["coverage"]["edges"]] == ["Wire", "Daily", "Times"]
            wire = card["coverage"]["edges"][0]["node"]["articles"][0]
            assert (wire["copyCount"], wire["copies"][0]["source"]["name"]) == (1, "Reruns")
        counts[n] = len(statements)
    # stories; representatives with their sources; coverage groups; their articles with their sources
    assert counts[5] == counts[20] <= 4, counts
    legacy = []
    for n in (5, 20):
        with count_queries(services) as statements:
            body = await gql.post(LEGACY, {"n": n})
        assert [len(e["node"]["articles"]) for e in body["data"]["stories"]["edges"]] == [2] * n
        legacy.append(len(statements))
    assert legacy == [2, 2]  # the deprecated `articles` is batched too: stories, then every story's articles
