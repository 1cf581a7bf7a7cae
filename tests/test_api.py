"""The GraphQL API: Relay connections, global ids, typed errors, limits, N+1 guard, subscriptions, health."""

from __future__ import annotations

import asyncio
import base64
import logging
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import websockets

from app.articles.repository import NewArticle, insert_new
from app.ingest.events import ARTICLES_ADDED, announce_articles_added
from app.outbox.relay import relay_all
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from tests.conftest import (
    GraphQLClient,
    document,
    free_port,
    serve_api,
    statements_per_page,
    subscribe_ws,
    until_listening,
)
from tests.newsroom import global_id


async def seed(services: Services, settings: Settings, *, sources: int, per_source: int) -> list[int]:
    """Sources with articles one minute apart; returns the article ids."""
    base = datetime(2026, 11, 1, tzinfo=UTC)
    ids: list[int] = []
    async with services.db.begin() as session:
        for s in range(sources):
            source = await create_source(session, settings, SourceRequest(feed_url=f"http://127.0.0.1:9/s{s}",
                                                                          name=f"Outlet {s}"))  # fmt: skip
            rows = [NewArticle(source_id=source.id, external_id=f"{s}-{k}", url=f"https://o{s}.example/{k}",
                               title=f"Outlet {s} story {k}", summary="", author=None,
                               published_at=base + timedelta(minutes=k * sources + s), content_hash=k)
                    for k in range(per_source)]  # fmt: skip
            ids += [a.id for a in await insert_new(session, rows)]
    return ids


async def test_pages_walk_every_article_once_in_order(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    await seed(services, settings, sources=3, per_source=9)
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        data = (await gql.run("Articles", first=10, after=after))["articles"]
        seen += [edge["node"]["id"] for edge in data["edges"]]
        assert data["pageInfo"]["hasPreviousPage"] == (after is not None)
        pages += 1
        if not data["pageInfo"]["hasNextPage"]:
            break
        after = data["pageInfo"]["endCursor"]
    assert pages == 3
    assert len(seen) == len(set(seen)) == 27
    published = [await _published(gql, node_id) for node_id in seen[:5]]
    assert published == sorted(published, reverse=True)


async def _published(gql: GraphQLClient, node_id: str) -> str:
    return str((await gql.run("Article", id=node_id))["article"]["publishedAt"])


async def test_articles_of_one_source(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    await seed(services, settings, sources=2, per_source=4)
    sources = (await gql.run("Sources"))["sources"]["edges"]
    source_id = sources[1]["node"]["id"]
    data = await gql.run("Articles", sourceId=source_id, first=50)
    assert {edge["node"]["source"]["id"] for edge in data["articles"]["edges"]} == {source_id}
    assert len(data["articles"]["edges"]) == 4
    wrong_type = await gql.post(document("Articles"), {"sourceId": data["articles"]["edges"][0]["node"]["id"]})
    assert wrong_type["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_first_is_capped(gql: GraphQLClient, services: Services) -> None:
    for first in (101, -1):
        body = await gql.post(document("Articles"), {"first": first})
        assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
        assert "between 0 and 100" in body["errors"][0]["message"]
    assert (await gql.run("Articles", first=100))["articles"]["edges"] == []


@pytest.mark.parametrize(
    "cursor",
    ["garbage", "", base64.urlsafe_b64encode(b'["source",1]').decode(), base64.urlsafe_b64encode(b"{}").decode(),
     base64.urlsafe_b64encode(b'["article","not a date",1]').decode(), "%%%%", "a" * 5000],
)  # fmt: skip
async def test_bad_cursors_are_a_typed_error(gql: GraphQLClient, services: Services, cursor: str) -> None:
    body = await gql.post(document("Articles"), {"after": cursor})
    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "BAD_CURSOR"


async def test_node_and_by_id_lookups(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    await seed(services, settings, sources=1, per_source=2)
    edge = (await gql.run("Articles", first=1))["articles"]["edges"][0]["node"]
    node = (await gql.run("Node", id=edge["id"]))["node"]
    assert node == {"id": edge["id"], "__typename": "Article", "title": edge["title"]}
    source = (await gql.run("Node", id=edge["source"]["id"]))["node"]
    assert source["__typename"] == "Source"
    assert (await gql.run("Source", id=edge["source"]["id"]))["source"]["name"] == "Outlet 0"
    missing = global_id("Article", 999999)
    forged = global_id("Article", -5)
    unknown_type = global_id("Nope", 1)
    assert (await gql.run("Node", id=missing))["node"] is None
    assert (await gql.run("Node", id=forged))["node"] is None
    assert (await gql.run("Node", id=unknown_type))["node"] is None
    assert (await gql.run("Article", id=edge["source"]["id"]))["article"] is None  # a Source id is no Article
    assert (await gql.post(document("Node"), {"id": "not-base64!"}))["errors"]


async def test_big_int_is_a_string(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    async with services.db.begin() as session:
        source = await create_source(session, settings, SourceRequest(feed_url="http://127.0.0.1:9/big"))
        await insert_new(session, [NewArticle(source.id, "x", "https://b.example/x", "Big", "", None,
                                              datetime.now(UTC), -(2**63))])  # fmt: skip
    node = (await gql.run("Articles", first=1))["articles"]["edges"][0]["node"]
    assert node["contentHash"] == str(-(2**63))


async def test_no_n_plus_one_on_article_sources(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    await seed(services, settings, sources=20, per_source=5)
    query = "query($n: Int) { articles(first: $n) { edges { node { title source { name crawl { circuit } } } } } }"
    # articles, their sources, the sources' schedules
    assert await statements_per_page(gql, services, query, (2, 100)) == [3, 3]


async def test_oversized_documents_are_refused(gql: GraphQLClient, services: Services) -> None:
    aliases = "{ " + " ".join(f"a{i}: health {{ ok }}" for i in range(40)) + " }"
    assert "aliases" in (await gql.post(aliases))["errors"][0]["message"]
    tokens = "{ health { " + "ok " * 3000 + "} }"
    assert "token" in (await gql.post(tokens))["errors"][0]["message"].lower()
    within = "{ " + " ".join(f"a{i}: health {{ ok }}" for i in range(20)) + " }"
    assert not (await gql.post(within)).get("errors")


async def test_a_malformed_global_id_is_a_clear_error(gql: GraphQLClient, services: Services) -> None:
    body = await gql.post(document("Node"), {"id": "x"})
    assert body["data"] == {"node": None}
    assert "GlobalID" in body["errors"][0]["message"]


async def test_depth_limit(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    inner = "id"
    for _ in range(settings.query_max_depth):
        inner = f'... on Article {{ source {{ id }} }} node(id: "x") {{ {inner} }}'
    body = await gql.post('{ node(id: "x") { ' + inner + " } }")
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_DEEP"
    assert "13 levels deep" in body["errors"][0]["message"]


async def test_health_query_and_endpoint(gql: GraphQLClient, api_url: str, services: Services) -> None:
    data = await gql.run("Health")
    assert data["health"]["ok"] is True
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{api_url}/healthz")
    assert response.status_code == 200
    assert response.json()["database"]["ok"] is True
    assert response.json()["redis"]["ok"] is True


async def test_healthz_is_503_only_when_the_database_does_not_answer(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """Given a database that refuses connections, /healthz says 503 with a coded reason, and the cause (its address,
    which the public must not see) only in the log, once however often the balancer asks."""
    port = free_port()
    unreachable = settings.model_copy(update={"database_url": f"postgresql+asyncpg://postgres@127.0.0.1:{port}/x"})
    opened = Services.open(unreachable)
    try:
        with caplog.at_level(logging.WARNING, logger="app.health"):
            async with serve_api(unreachable, opened) as url, httpx.AsyncClient(timeout=30) as client:
                response = await client.get(f"{url}/healthz")
                again = await client.get(f"{url}/healthz")
    finally:
        await opened.close()
    assert response.status_code == again.status_code == 503
    assert (response.json()["ok"], response.json()["database"]["ok"], response.json()["redis"]["ok"]) == (
        False, False, True)  # fmt: skip
    assert response.json()["degraded"] == []
    assert response.json()["database"]["error"] == "unreachable"
    assert str(port) not in response.text
    assert "127.0.0.1" not in response.text
    logged = [r.getMessage() for r in caplog.records if r.name == "app.health"]
    assert len(logged) == 1, logged
    assert "database unreachable" in logged[0]
    assert str(port) in logged[0]


async def test_graphiql_is_served_to_browsers(api_url: str, services: Services) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{api_url}/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert "graphiql" in response.text.lower()


async def test_article_added_subscription_over_websocket(api_url: str, services: Services, settings: Settings) -> None:
    ids = await seed(services, settings, sources=2, per_source=1)
    stream = subscribe_ws(api_url, document("ArticleAdded"), {})
    first = asyncio.ensure_future(anext(stream))
    await until_listening(services, ARTICLES_ADDED)
    # Sources 1 and 2 were created by seed(); announce as ingest does, relay as the worker does after its commit.
    async with services.engine.begin() as connection:
        await announce_articles_added(connection, 2, [ids[1]])
    assert await relay_all(services.engine, services.redis, (ARTICLES_ADDED,)) == 1
    message = await asyncio.wait_for(first, 10)
    assert message["type"] == "next"
    assert message["payload"]["data"]["articleAdded"]["title"] == "Outlet 1 story 0"
    await stream.aclose()


async def test_cross_origin_websockets_are_refused(api_url: str, services: Services) -> None:
    stream = subscribe_ws(api_url, document("ArticleAdded"), {}, origin="https://evil.example")
    with pytest.raises(websockets.exceptions.InvalidStatus):
        await asyncio.wait_for(anext(stream), 10)
