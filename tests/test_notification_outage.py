"""`notificationAdded` across a Redis outage: notifications written while Redis was stopped (their announcement
lost) reach the live subscriber from the notifications table, each once and in order, and a subscriber that
reconnects with the last one it received gets those written since, then the live ones.

Redis here is a server of the test's own, so stopping it touches nobody else."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import websockets
from sqlalchemy import text

from app.notifications.fanout import fan_out
from app.services import Services
from app.settings import Settings
from tests.alerts import add_breaking_events, until_subscribed
from tests.conftest import GraphQLClient, document, next_message, serve_api, subscribe_message
from tests.newsroom import add_breaking_event, sign_up
from tests.test_redis_outage import own_redis, services_on


async def subscribe_notifications(api_url: str, token: str, after: str | None = None) -> Any:
    ws = await websockets.connect(api_url.replace("http://", "ws://") + "/graphql",
                                  subprotocols=["graphql-transport-ws"])  # type: ignore[list-item]  # fmt: skip
    await ws.send(json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}))
    assert json.loads(await ws.recv())["type"] == "connection_ack"
    await ws.send(subscribe_message("1", document("NotificationAdded"), {"after": after}))
    return ws


async def next_notification(ws: Any) -> dict[str, Any]:
    message = await next_message(ws, seconds=60)
    assert message["type"] == "next", message
    added: dict[str, Any] = message["payload"]["data"]["notificationAdded"]
    return added


def _row(global_id: str) -> int:
    return int(base64.b64decode(global_id).decode().split(":")[1])


async def break_story(own: Services, story_id: int) -> None:
    await add_breaking_event(own, story_id)
    await fan_out(own.engine, own.settings, own.redis)


async def test_notifications_written_while_redis_was_away_reach_the_subscriber_once(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    with own_redis(tmp_path / "redis") as server:
        async with services_on(settings, server) as own, serve_api(own.settings, own) as api_url:
            async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
                token = await sign_up(GraphQLClient(http))
                assert (await GraphQLClient(http).as_(token).run("AlertRulesSet", input={}))["alertRulesSet"]
            live = await subscribe_notifications(api_url, token)
            await until_subscribed(own, 1)
            # given one notification pushed live
            await break_story(own, 1)
            first = await next_notification(live)
            assert first["title"] == "Story 1"
            # when Redis stops and two stories break (their announcements cannot be published)
            server.stop()
            await break_story(own, 2)
            await break_story(own, 3)
            server.start()
            # then the live subscriber gets both from the table, in order, once
            assert [(await next_notification(live))["title"] for _ in range(2)] == ["Story 2", "Story 3"]
            # and a subscriber that reconnects after the first one gets those written since, then the live ones
            resumed = await subscribe_notifications(api_url, token, after=first["id"])
            assert [(await next_notification(resumed))["title"] for _ in range(2)] == ["Story 2", "Story 3"]
            await until_subscribed(own, 2)
            for story in (4, 5):
                await break_story(own, story)
            # nothing came twice: the next two of each are the two new ones
            assert [(await next_notification(live))["title"] for _ in range(2)] == ["Story 4", "Story 5"]
            assert [(await next_notification(resumed))["title"] for _ in range(2)] == ["Story 4", "Story 5"]
            await live.close()
            await resumed.close()


async def test_resuming_after_someone_elses_notification_or_a_story_is_refused(
    services: Services, settings: Settings, api_url: str, gql: GraphQLClient
) -> None:
    alice = await sign_up(gql, "alice@example.com")
    bob = await sign_up(gql, "bob@example.com")
    for token in (alice, bob):
        await gql.as_(token).run("AlertRulesSet", input={})
    await add_breaking_event(services, 1)
    await fan_out(services.engine, settings, services.redis)
    alices = (await gql.as_(alice).run("Notifications", first=1))["notifications"]["edges"][0]["node"]["id"]
    wrong = await subscribe_notifications(api_url, bob, after="U3Rvcnk6MQ==")  # Story:1
    message = await next_message(wrong, seconds=30)
    assert [e["extensions"]["code"] for e in message["payload"]["errors"]] == ["BAD_USER_INPUT"]
    await wrong.close()
    # an id is only a position: Bob resuming after Alice's notification gets his own newer ones, never hers
    bobs = await subscribe_notifications(api_url, bob, after=alices)
    await until_subscribed(services, 1)
    await add_breaking_event(services, 2)
    await fan_out(services.engine, settings, services.redis)
    first, second = await next_notification(bobs), await next_notification(bobs)
    assert [first["title"], second["title"]] == ["Story 1", "Story 2"]
    async with services.engine.connect() as connection:
        owners = await connection.scalars(text("SELECT user_id FROM notifications WHERE id = ANY(:ids)"),
                                          {"ids": [_row(first["id"]), _row(second["id"])]})  # fmt: skip
        assert set(owners) == {await connection.scalar(text("SELECT id FROM users WHERE email = 'bob@example.com'"))}
    await bobs.close()


async def test_a_flood_written_during_an_outage_arrives_whole_in_order(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    flood = 450  # more than two pages of the table
    with own_redis(tmp_path / "redis") as server:
        async with services_on(settings, server) as own, serve_api(own.settings, own) as api_url:
            async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
                token = await sign_up(GraphQLClient(http))
                rules = {"capPerHour": 1000}
                assert (await GraphQLClient(http).as_(token).run("AlertRulesSet", input=rules))["alertRulesSet"]
            live = await subscribe_notifications(api_url, token)
            await until_subscribed(own, 1)
            server.stop()
            await add_breaking_events(own, flood)
            while (await fan_out(own.engine, own.settings, own.redis)).batches:
                pass
            server.start()
            titles = [(await next_notification(live))["title"] for _ in range(flood)]
            assert titles == [f"Story {n}" for n in range(1, flood + 1)]
            await break_story(own, 10_000)  # the next is the live one: nothing of the flood came twice
            assert (await next_notification(live))["title"] == "Story 10000"
            await live.close()
