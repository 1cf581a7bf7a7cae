"""Breaking news through the API: the live subscription (filtered) and the catch-up list after a cursor."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from app.outbox.models import OutboxEvent
from app.outbox.relay import relay
from app.services import Services
from app.stories.velocity import BREAKING_TOPIC
from tests.conftest import GraphQLClient, document, subscribe_ws


async def breaking(services: Services, story_id: int, topics: list[str], languages: list[str]) -> None:
    """An event as app/stories/velocity.py writes it."""
    payload = {"story_id": story_id, "title": f"Story {story_id}", "article_count": 70, "source_count": 6,
               "topics": topics, "languages": languages, "velocity": 2.3, "sources_in_window": 6,
               "at": datetime.now(UTC).isoformat()}  # fmt: skip
    async with services.db.begin() as session:
        session.add(OutboxEvent(topic=BREAKING_TOPIC, dedupe_key=f"{BREAKING_TOPIC}:{story_id}", payload=payload))


async def test_a_client_catches_up_after_its_last_cursor(gql: GraphQLClient, services: Services) -> None:
    for story_id in (1, 2, 3):
        await breaking(services, story_id, ["world"], ["en"])
    first = (await gql.run("BreakingEvents", first=1))["breakingEvents"]
    assert [e["node"]["title"] for e in first["edges"]] == ["Story 1"]
    assert first["pageInfo"]["hasNextPage"] is True
    rest = (await gql.run("BreakingEvents", first=10, after=first["pageInfo"]["endCursor"]))["breakingEvents"]
    assert [e["node"]["title"] for e in rest["edges"]] == ["Story 2", "Story 3"]
    assert rest["edges"][0]["node"]["topics"] == ["WORLD"]
    assert rest["edges"][0]["node"]["story"] is None  # these stories are not in the database
    bad = await gql.post(document("BreakingEvents"), {"after": "not-a-cursor"})
    assert bad["errors"][0]["extensions"]["code"] == "BAD_CURSOR"


async def test_the_subscription_delivers_what_matches_its_filters(api_url: str, gql: GraphQLClient,
                                                                  services: Services) -> None:  # fmt: skip
    stream = subscribe_ws(api_url, document("BreakingNews"), {"topics": ["POLITICS"], "languages": ["en"]})
    received = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.3)  # let the subscription reach Redis
    await breaking(services, 10, ["world"], ["en"])  # another topic: not for this client
    await breaking(services, 11, ["politics", "world"], ["fr"])  # another language: not for this client
    await breaking(services, 12, ["politics"], ["en", "fr"])
    assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 3
    message: dict[str, Any] = await asyncio.wait_for(received, 10)
    event = message["payload"]["data"]["breakingNews"]
    assert (event["title"], event["topics"], event["sourceCount"]) == ("Story 12", ["POLITICS"], 6)
    await stream.aclose()
    await breaking(services, 13, ["politics"], ["en"])  # published while the client was away
    missed = (await gql.run("BreakingEvents", first=10, after=event["cursor"]))["breakingEvents"]
    assert [e["node"]["title"] for e in missed["edges"]] == ["Story 13"]
    assert json.dumps(missed)  # plain JSON all the way
