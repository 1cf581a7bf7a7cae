"""Breaking news through the API: the live subscription (filtered) and the catch-up list after a cursor."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from app.outbox.relay import relay
from app.services import Services
from app.settings import Settings
from app.stories.velocity import BREAKING_TOPIC
from tests.conftest import GraphQLClient, count_queries, document, subscribe_ws, until_listening
from tests.newsroom import StorySpec, add_breaking_event, add_source, add_story

SUBSCRIBERS = 8


async def test_a_client_catches_up_after_its_last_cursor(gql: GraphQLClient, services: Services) -> None:
    for story_id in (1, 2, 3):
        await add_breaking_event(services, story_id)
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
    await until_listening(services, BREAKING_TOPIC)
    await add_breaking_event(services, 10)  # another topic: not for this client
    await add_breaking_event(services, 11, ["politics", "world"], ["fr"])  # another language: not for this client
    await add_breaking_event(services, 12, ["politics"], ["en", "fr"])
    assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 3
    message: dict[str, Any] = await asyncio.wait_for(received, 10)
    event = message["payload"]["data"]["breakingNews"]
    assert (event["title"], event["topics"], event["sourceCount"]) == ("Story 12", ["POLITICS"], 6)
    await stream.aclose()
    await add_breaking_event(services, 13, ["politics"], ["en"])  # published while the client was away
    missed = (await gql.run("BreakingEvents", first=10, after=event["cursor"]))["breakingEvents"]
    assert [e["node"]["title"] for e in missed["edges"]] == ["Story 13"]
    assert json.dumps(missed)  # plain JSON all the way


async def test_one_event_to_many_subscribers_loads_the_story_once(api_url: str, services: Services,
                                                                  settings: Settings) -> None:  # fmt: skip
    outlets = [await add_source(services, settings, f"outlet{i}") for i in range(5)]
    story_id, _ = await add_story(services, StorySpec("Dam bursts upstream", outlets, breaking=True))
    streams = [subscribe_ws(api_url, document("BreakingNews"), {}) for _ in range(SUBSCRIBERS)]
    received = [asyncio.ensure_future(anext(s)) for s in streams]
    await until_listening(services, BREAKING_TOPIC, count=SUBSCRIBERS)
    await add_breaking_event(services, story_id)
    with count_queries(services) as statements:
        await relay(services.engine, services.redis, [BREAKING_TOPIC])
        frames = await asyncio.wait_for(asyncio.gather(*received), 10)
    stories = [f["payload"]["data"]["breakingNews"]["story"] for f in frames]
    assert all(s is not None and s["representative"]["url"] for s in stories)
    assert len(statements) <= 6  # the relay's own, then one per hop for all subscribers together
    for stream in streams:
        await stream.aclose()
