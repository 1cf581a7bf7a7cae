"""Live full coverage: clustering writes a `story.updated` event with the story, the relay publishes it, and the
`storyUpdated` subscription pushes it to whoever follows that story (also across a merge); old events are pruned."""

from __future__ import annotations

import asyncio
import json
import zlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from app.api import subscriptions
from app.articles.repository import NewArticle, insert_new
from app.outbox import repository as outbox
from app.outbox.models import OutboxEvent
from app.realtime.broadcast import channel_of, channel_prefix
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.stories import watching
from app.stories.models import StoryCluster
from app.stories.service import cluster_articles
from app.stories.updates import STORY_UPDATED_TOPIC
from app.stories.velocity import BREAKING_TOPIC
from app.stories.watching import Sessions
from jobs.outbox import publish_outbox
from tests.conftest import document, next_message, subscribe_message, subscribe_ws, until_listening, ws_connection
from tests.newsroom import global_id, merge_story, two_stories_of_one_event

FED = "Fed's Plosser says weak data caused by weather, taper on track"
APPLE = "Apple unveils iPhone 6 with larger screen"


def story_gid(story_id: int) -> str:
    return global_id("Story", story_id)


async def articles(services: Services, settings: Settings, title: str, outlets: range) -> list[int]:
    """One article with `title` from each outlet in `outlets` (outlet k: its own source)."""
    ids = []
    now = datetime.now(UTC)
    async with services.db.begin() as session:
        for k in outlets:
            source = await create_source(session, settings, SourceRequest(
                feed_url=f"http://127.0.0.1:9/outlet{k}", name=f"Outlet {k}"), existing_ok=True)  # fmt: skip
            key = f"{zlib.crc32(title.encode())}-{k}"
            new = NewArticle(source.id, key, f"https://o{k}.example/{key}", title, "", None, now + timedelta(seconds=k),
                             k)  # fmt: skip
            ids += [a.id for a in await insert_new(session, [new])]
    return ids


async def updates(services: Services) -> list[OutboxEvent]:
    async with services.db() as session:
        query = select(OutboxEvent).where(OutboxEvent.topic == STORY_UPDATED_TOPIC).order_by(OutboxEvent.id)
        return list(await session.scalars(query))


async def story_of(services: Services, story_id: int) -> StoryCluster:
    async with services.db() as session:
        found = await session.get(StoryCluster, story_id)
    assert found is not None
    return found


async def next_data(stream: Any) -> dict[str, Any]:
    message: dict[str, Any] = await asyncio.wait_for(anext(stream), 10)
    assert message["type"] == "next", message
    data: dict[str, Any] = message["payload"]["data"]["storyUpdated"]
    return data


async def test_articles_joining_a_story_write_one_update_with_its_save(services: Services, settings: Settings) -> None:
    first = await cluster_articles(services.engine, await articles(services, settings, FED, range(2)))
    assert await updates(services) == []  # a story the save created: nobody can be following it yet
    [story_id] = set(first.values())
    await cluster_articles(services.engine, await articles(services, settings, FED, range(2, 4)))
    [event] = await updates(services)
    story = await story_of(services, story_id)
    assert event.payload == {"story_id": story_id, "article_count": 4, "source_count": 4, "revision": story.revision,
                             "last_updated_at": story.last_updated_at.isoformat()}  # fmt: skip
    async with services.engine.begin() as connection:  # the same save replayed adds nothing
        await outbox.add_once(connection, STORY_UPDATED_TOPIC, {event.dedupe_key or "": dict(event.payload)})
    assert len(await updates(services)) == 1


async def test_a_follower_gets_the_stories_it_follows_as_articles_join(api_url: str, services: Services,
                                                                      settings: Settings) -> None:  # fmt: skip
    fed = set((await cluster_articles(services.engine, await articles(services, settings, FED, range(2)))).values())
    apple = set((await cluster_articles(services.engine, await articles(services, settings, APPLE, range(2)))).values())
    [fed_id], [apple_id] = fed, apple
    stream = subscribe_ws(api_url, document("StoryUpdated"), {"id": story_gid(fed_id)})
    first = asyncio.ensure_future(next_data(stream))
    await until_listening(services, STORY_UPDATED_TOPIC, story_id=fed_id)
    await cluster_articles(services.engine, await articles(services, settings, APPLE, range(2, 3)))  # not followed
    await cluster_articles(services.engine, await articles(services, settings, FED, range(2, 3)))  # a new outlet
    await cluster_articles(services.engine, await articles(services, settings, FED, range(2, 3)))  # nothing new
    await cluster_articles(services.engine, await articles(services, settings, FED + " again", range(1)))
    assert await publish_outbox(services) == 3
    update = await first
    assert (update["articleCount"], update["sourceCount"]) == (3, 3)
    assert update["story"]["id"] == story_gid(fed_id)
    assert update["story"]["title"] == FED
    again = await next_data(stream)  # the same outlet again: the count moves, the outlets do not
    assert (again["articleCount"], again["sourceCount"]) == (4, 3)
    assert apple_id != fed_id
    await stream.aclose()


async def test_a_follower_of_a_merged_story_follows_the_story_it_joined(api_url: str, services: Services,
                                                                       settings: Settings) -> None:  # fmt: skip
    ids = await articles(services, settings, FED, range(2))
    old, survivor = await two_stories_of_one_event(services, ids, [FED] * len(ids))
    stream = subscribe_ws(api_url, document("StoryUpdated"), {"id": story_gid(old)})
    first = asyncio.ensure_future(next_data(stream))
    await until_listening(services, STORY_UPDATED_TOPIC, story_id=old)
    await merge_story(services, old, survivor)
    await publish_outbox(services)
    merged = await first
    assert (merged["story"]["id"], merged["articleCount"], merged["sourceCount"]) == (story_gid(survivor), 2, 2)
    await until_listening(services, STORY_UPDATED_TOPIC, story_id=survivor)
    await cluster_articles(services.engine, await articles(services, settings, FED, range(2, 3)))
    await publish_outbox(services)
    grown = await next_data(stream)
    assert (grown["story"]["id"], grown["articleCount"], grown["sourceCount"]) == (story_gid(survivor), 3, 3)
    await stream.aclose()


async def test_an_id_that_names_no_story_is_an_error_at_subscribe_time(api_url: str, services: Services) -> None:
    article_id = global_id("Article", 1)
    async with ws_connection(api_url) as ws:
        for operation, story in (("unknown", story_gid(12345)), ("article", article_id), ("malformed", "x")):
            await ws.send(subscribe_message(operation, document("StoryUpdated"), {"id": story}))
            message = await next_message(ws)
            assert (message["id"], message["type"]) == (operation, "error"), message
            codes = [error.get("extensions", {}).get("code") for error in message["payload"]]
            expected = ["NOT_FOUND"] if operation == "unknown" else ["BAD_USER_INPUT"]
            assert codes == expected, message
        await ws.send(json.dumps({"type": "ping"}))  # the connection goes on
        assert json.loads(await asyncio.wait_for(ws.recv(), 10)) == {"type": "pong"}


async def test_the_relay_publishes_every_pending_update_and_breaking_news_first(services: Services) -> None:
    pubsub = services.redis.pubsub(ignore_subscribe_messages=True)
    await pubsub.psubscribe(channel_prefix(services.redis) + "story.*")
    async with services.engine.begin() as connection:
        await outbox.add_once(connection, STORY_UPDATED_TOPIC, {f"u{i}": {"story_id": i, "revision": 1}
                                                                for i in range(250)})  # fmt: skip
        await outbox.add_once(connection, BREAKING_TOPIC, {"b": {"story_id": 7}})
    assert await publish_outbox(services) == 251  # more than one relay batch: all of it, not the first 100
    first = None
    while first is None:
        first = await asyncio.wait_for(pubsub.get_message(timeout=5), 6)
    assert first["channel"] == channel_of(services.redis, BREAKING_TOPIC).encode()
    await pubsub.aclose()


async def test_an_update_published_while_the_subscription_starts_is_not_missed(api_url: str, services: Services,
                                                                              settings: Settings,
                                                                              monkeypatch: pytest.MonkeyPatch
                                                                              ) -> None:  # fmt: skip
    [fed_id] = set((await cluster_articles(services.engine, await articles(services, settings, FED, range(2)))
                    ).values())  # fmt: skip

    async def read_then_articles_join(sessions: Sessions, story_id: int) -> StoryCluster | None:
        """The story read at subscribe time; then, before anything else, an outlet joins it and the relay publishes."""
        story = await watching.current_story(sessions, story_id)
        await cluster_articles(services.engine, await articles(services, settings, FED, range(2, 3)))
        assert await publish_outbox(services) == 1
        return story

    monkeypatch.setattr(subscriptions, "current_story", read_then_articles_join)
    stream = subscribe_ws(api_url, document("StoryUpdated"), {"id": story_gid(fed_id)})
    update = await next_data(stream)
    assert (update["articleCount"], update["sourceCount"]) == (3, 3)
    await stream.aclose()
