"""Queries and mutations over one long-lived WebSocket each run as a request over HTTP does: with loaders of their own,
so a socket never reads what an earlier operation on it cached, nor what a subscription running beside it loaded."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.articles.repository import NewArticle, insert_new
from app.ingest.events import ARTICLES_ADDED, announce_articles_added
from app.outbox.relay import relay_all
from app.services import Services
from app.settings import Settings
from tests.conftest import GraphQLClient, document, next_message, subscribe_message, until_listening, ws_connection
from tests.newsroom import add_source, administrator, global_id

RENAME = {"name": "Renamed Outlet"}


async def answer(ws: Any, id: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """The data of one single-result operation sent on `ws` (its `next`, then its `complete`)."""
    await ws.send(subscribe_message(id, query, variables))
    result = await next_message(ws)
    assert (result["id"], result["type"]) == (id, "next"), result
    assert not result["payload"].get("errors"), result
    assert await next_message(ws) == {"id": id, "type": "complete"}
    data: dict[str, Any] = result["payload"]["data"]
    return data


async def test_a_query_after_a_mutation_on_the_same_socket_reads_the_change(api_url: str, gql: GraphQLClient,
                                                                            services: Services,
                                                                            settings: Settings) -> None:  # fmt: skip
    admin = await administrator(gql, services)
    source = global_id("Source", await add_source(services, settings, "Outlet"))
    async with ws_connection(api_url, token=admin.token) as ws:
        assert (await answer(ws, "1", document("Source"), {"id": source}))["source"]["name"] == "Outlet"
        renamed = await answer(ws, "2", document("SourceUpdate"), {"id": source, "input": RENAME})
        assert renamed["sourceUpdate"]["source"]["name"] == RENAME["name"]
        assert (await answer(ws, "3", document("Source"), {"id": source}))["source"]["name"] == RENAME["name"]


async def test_a_query_beside_a_running_subscription_does_not_read_through_the_events_loaders(
    api_url: str, gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    admin = await administrator(gql, services)
    source_id = await add_source(services, settings, "Outlet")
    async with services.db.begin() as session:
        [article] = await insert_new(session, [NewArticle(source_id, "a1", "https://outlet.example/a1", "Headline", "",
                                                          None, datetime.now(UTC), 0)])  # fmt: skip
    async with ws_connection(api_url, token=admin.token) as ws:
        await ws.send(subscribe_message("live", document("ArticleAdded")))
        await until_listening(services, ARTICLES_ADDED)
        async with services.engine.begin() as connection:
            await announce_articles_added(connection, source_id, [article.id])
        await relay_all(services.engine, services.redis, (ARTICLES_ADDED,))
        added = await next_message(ws)
        assert added["payload"]["data"]["articleAdded"]["source"]["name"] == "Outlet"  # the event's loaders hold it
        await admin.run("SourceUpdate", id=global_id("Source", source_id), input=RENAME)
        now = await answer(ws, "1", document("Source"), {"id": global_id("Source", source_id)})
        assert now["source"]["name"] == RENAME["name"]
