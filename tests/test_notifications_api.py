"""Readers' alerts through the API: rules (hostile input refused with typed errors), in-app notifications with read
state and the live `notificationAdded`, story follows, webhook endpoints behind the SSRF guard, dead deliveries for
administrators, and `breakingEvents` filtered like the subscription."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import websockets

from app.notifications.fanout import fan_out
from app.services import Services
from app.settings import Settings
from tests.alerts import until_subscribed
from tests.conftest import GraphQLClient, document, subscribe_message
from tests.newsroom import StorySpec, add_breaking_event, add_source, add_story, administrator, global_id, sign_up

RULES = {"topics": ["POLITICS"], "languages": ["en"], "timeZone": "Europe/Paris", "quietStart": 1320,
         "quietEnd": 420, "capPerHour": 5, "digest": "DAILY"}  # fmt: skip


async def test_rules_are_checked_and_stored(gql: GraphQLClient) -> None:
    reader = gql.as_(await sign_up(gql))
    stored = (await reader.run("AlertRulesSet", input=RULES))["alertRulesSet"]
    assert stored["errors"] == []
    assert (stored["rules"]["timeZone"], stored["rules"]["digest"], stored["rules"]["topics"]) == (
        "Europe/Paris", "DAILY", ["POLITICS"])  # fmt: skip
    for bad, field in (({"timeZone": "Mars/Olympus_Mons"}, "timeZone"), ({"timeZone": "../../etc/passwd"}, "timeZone"),
                       ({"timeZone": "Europe"}, "timeZone"), ({"timeZone": "America/Argentina"}, "timeZone"),
                       ({"quietStart": 5000, "quietEnd": 1}, "quietStart"), ({"quietStart": None}, "quietStart"),
                       ({"capPerHour": -1}, "capPerHour"), ({"entities": ["x" * 201]}, "entities"),
                       ({"sourceIds": list(range(101))}, "sourceIds")):  # fmt: skip
        refused = (await reader.run("AlertRulesSet", input=RULES | bad))["alertRulesSet"]
        assert refused["rules"] is None
        assert [(e["code"], e["field"]) for e in refused["errors"]] == [("INVALID", field)], bad
    hostile = (await reader.run("AlertRulesSet", input=RULES | {"languages": ["x" * 10_000]}))["alertRulesSet"]
    assert [(e["code"], e["field"]) for e in hostile["errors"]] == [("INVALID", "languages")]
    anonymous = await gql.post(document("AlertRulesSet"), {"input": RULES})
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_reader_reads_and_marks_their_own_notifications(gql: GraphQLClient, services: Services,
                                                                settings: Settings) -> None:  # fmt: skip
    alice, bob = gql.as_(await sign_up(gql, "alice@example.com")), gql.as_(await sign_up(gql, "bob@example.com"))
    for reader in (alice, bob):
        assert (await reader.run("AlertRulesSet", input={}))["alertRulesSet"]["errors"] == []
    await add_breaking_event(services, 3, ["politics"], ["en"])
    await add_breaking_event(services, 4, ["sports"], ["en"])
    await fan_out(services.engine, settings)
    mine = await alice.run("Notifications", first=10, unreadOnly=True)
    assert mine["unreadNotifications"] == 2
    titles = [e["node"]["title"] for e in mine["notifications"]["edges"]]
    assert titles == ["Story 4", "Story 3"]  # newest first
    first_id = mine["notifications"]["edges"][0]["node"]["id"]
    assert (await bob.run("NotificationsMarkRead", ids=[first_id]))["notificationsMarkRead"]["marked"] == 0
    marked = (await alice.run("NotificationsMarkRead", ids=[first_id]))["notificationsMarkRead"]
    assert marked == {"marked": 1, "unread": 1}
    unread = (await alice.run("Notifications", first=10, unreadOnly=True))["notifications"]["edges"]
    assert [e["node"]["title"] for e in unread] == ["Story 3"]
    assert (await alice.run("NotificationsMarkRead"))["notificationsMarkRead"] == {"marked": 1, "unread": 0}
    assert (await bob.run("Notifications", first=10))["unreadNotifications"] == 2  # Bob's are his own
    page = (await alice.run("Notifications", first=1))["notifications"]
    rest = (await alice.run("Notifications", first=5, after=page["pageInfo"]["endCursor"]))["notifications"]
    assert [e["node"]["title"] for e in page["edges"] + rest["edges"]] == ["Story 4", "Story 3"]
    bad = await alice.post(document("Notifications"), {"after": "x" * 5000})
    assert bad["errors"][0]["extensions"]["code"] == "BAD_CURSOR"


async def test_a_notification_arrives_live_over_the_websocket(api_url: str, gql: GraphQLClient, services: Services,
                                                              settings: Settings) -> None:  # fmt: skip
    token = await sign_up(gql, "live@example.com")
    await gql.as_(token).run("AlertRulesSet", input={"topics": ["SCIENCE"]})
    url = api_url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await ws.send(subscribe_message("1", document("NotificationAdded")))
        await until_subscribed(services, 1)
        await add_breaking_event(services, 6, ["politics"], ["en"])  # not one of this reader's topics
        await add_breaking_event(services, 7, ["science"], ["en"])
        await fan_out(services.engine, settings, services.redis)
        message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
    added = message["payload"]["data"]["notificationAdded"]
    assert (added["title"], added["priority"], added["kind"]) == ("Story 7", "URGENT", "breaking")


async def test_following_a_story_and_a_story_that_does_not_exist(gql: GraphQLClient, services: Services,
                                                                 settings: Settings) -> None:  # fmt: skip
    reader = gql.as_(await sign_up(gql))
    outlets = [await add_source(services, settings, "outlet")]
    story_id, _ = await add_story(services, StorySpec("Council votes on the budget", outlets))
    followed = (await reader.run("StoryFollow", id=global_id("Story", story_id)))["storyFollow"]
    assert (followed["story"]["title"], followed["errors"]) == ("Council votes on the budget", [])
    rules = (await reader.post("{ alertRules { breaking storyUpdates } }"))["data"]["alertRules"]
    assert rules == {"breaking": False, "storyUpdates": True}  # following opts in to that story only
    missing = (await reader.run("StoryFollow", id=global_id("Story", 999_999)))["storyFollow"]
    assert [e["code"] for e in missing["errors"]] == ["NOT_FOUND"]
    wrong = await reader.post(document("StoryFollow"), {"id": global_id("Source", 1)})
    assert wrong["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


REFUSED = ["http://127.0.0.1:8080/hook", "http://10.1.2.3/hook", "http://169.254.169.254/", "ftp://example.com/hook",
           "file:///etc/passwd", "http://[::1]/hook"]  # fmt: skip
UNSENDABLE = ["https://example.com/a\x7fb", "https://example.com/a\tb", "https://example.com/a b",
              "https://bücher.example/hook", "http://[::1/hook", "http://example.com:99999/hook", " "]  # fmt: skip


@pytest.mark.parametrize(("url", "code"), [(url, "ADDRESS_REFUSED") for url in REFUSED]
                                          + [(url, "INVALID") for url in UNSENDABLE])  # fmt: skip
async def test_a_webhook_endpoint_off_the_public_web_or_unsendable_is_refused(gql: GraphQLClient, url: str,
                                                                             code: str) -> None:  # fmt: skip
    reader = gql.as_(await sign_up(gql))
    key = (await reader.post(document("ApiKeyCreate"), {"name": "phone app"}))["data"]["apiKeyCreate"]["apiKey"]["id"]
    refused = (await reader.run("WebhookEndpointSet", apiKeyId=key, url=url))["webhookEndpointSet"]
    assert (refused["endpoint"], refused["secret"]) == (None, None)
    assert [(e["code"], e["field"]) for e in refused["errors"]] == [(code, "url")]


async def test_someone_elses_api_key_gets_no_endpoint(gql: GraphQLClient) -> None:
    owner, other = gql.as_(await sign_up(gql, "owner@example.com")), gql.as_(await sign_up(gql, "other@example.com"))
    key = (await owner.post(document("ApiKeyCreate"), {"name": "app"}))["data"]["apiKeyCreate"]["apiKey"]["id"]
    taken = await other.run("WebhookEndpointSet", apiKeyId=key, url="https://example.com/hook")
    assert [e["code"] for e in taken["webhookEndpointSet"]["errors"]] == ["NOT_FOUND"]
    nonsense = await other.post(document("WebhookEndpointSet"), {"apiKeyId": "9" * 40, "url": "https://x.org/"})
    assert nonsense["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_dead_deliveries_are_for_administrators(gql: GraphQLClient, services: Services) -> None:
    reader = gql.as_(await sign_up(gql))
    forbidden = await reader.post(document("DeadDeliveries"), {"first": 10})
    assert forbidden["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    replay = await reader.post(document("DeliveriesReplay"), {"ids": ["1"]})
    assert replay["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    admin = await administrator(gql, services)
    assert (await admin.run("DeadDeliveries", first=10))["deadDeliveries"] == []
    for wrong in ("x1", "-1", "9" * 19, "U3Rvcnk6MQ=="):
        refused = await admin.post(document("DeadDeliveries"), {"first": 10, "afterId": wrong})
        assert [(e["extensions"]["code"], e["message"]) for e in refused["errors"]] == [
            ("BAD_USER_INPUT", "afterId: a delivery id from this list")
        ]
    assert (await admin.run("DeliveriesReplay", ids=["1"]))["deliveriesReplay"]["replayed"] == []


async def test_breaking_events_filter_like_the_subscription(gql: GraphQLClient, services: Services) -> None:
    await add_breaking_event(services, 1, ["politics"], ["en"])
    await add_breaking_event(services, 2, ["sports"], ["fr"])
    await add_breaking_event(services, 3, ["politics", "world"], ["fr"])

    async def titles(**filters: Any) -> list[str]:
        found = (await gql.run("BreakingEvents", first=10, **filters))["breakingEvents"]["edges"]
        return [e["node"]["title"] for e in found]

    assert await titles() == ["Story 1", "Story 2", "Story 3"]
    assert await titles(topics=["POLITICS"]) == ["Story 1", "Story 3"]
    assert await titles(languages=["fr"]) == ["Story 2", "Story 3"]
    assert await titles(topics=["POLITICS"], languages=["fr"]) == ["Story 3"]
