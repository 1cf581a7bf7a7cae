"""A reader's `notificationAdded` lasts as long as the credential its socket signed in with: after `logOut` or
`apiKeyRevoke` no notification goes out on it, and it ends with UNAUTHENTICATED, at the next notification or within a
keep-alive interval if none comes. Over real WebSockets, with the npm `graphql-ws` client too."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

import pytest

from app.api.auth import authenticated
from app.api.context import Context
from app.api.live_auth import still_signed_in
from app.api.queue import JobQueue
from app.notifications.fanout import fan_out
from app.services import Services
from app.settings import Settings
from tests.alerts import until_subscribed
from tests.conftest import (
    GraphQLClient,
    document,
    next_message,
    serve_api,
    subscribe_message,
    ws_connection,
)
from tests.newsroom import add_breaking_event, log_in, sign_up
from tests.test_graphql_ws_client import reference_client


async def credential(gql: GraphQLClient, kind: str) -> tuple[str, Any]:
    """A new reader's credential of `kind` (a session token or an API key) and how to revoke it."""
    token = await sign_up(gql, f"{kind}@example.com")
    reader = gql.as_(token)
    assert (await reader.run("AlertRulesSet", input={}))["alertRulesSet"]["errors"] == []  # every breaking story
    if kind == "session":
        return token, lambda: reader.run("LogOut")
    created = (await reader.post(document("ApiKeyCreate"), {"name": "ticker"}))["data"]["apiKeyCreate"]
    return created["key"], lambda: reader.run("ApiKeyRevoke", id=created["apiKey"]["id"])


def codes(message: dict[str, Any]) -> tuple[str, list[str]]:
    """The operation a message is for and its errors' codes."""
    errors = message["payload"].get("errors") or []
    return message["id"], [e.get("extensions", {}).get("code") for e in errors]


async def breaking_notification(services: Services, settings: Settings, story: int) -> None:
    await add_breaking_event(services, story, ["science"], ["en"])
    await fan_out(services.engine, settings, services.redis)


@pytest.mark.parametrize("kind", ["session", "api_key"])
async def test_after_signing_out_the_next_notification_is_not_sent_and_the_subscription_ends(
    api_url: str, gql: GraphQLClient, services: Services, settings: Settings, kind: str
) -> None:
    secret, revoke = await credential(gql, kind)
    async with ws_connection(api_url, token=secret) as ws:
        await ws.send(subscribe_message("live", document("NotificationAdded")))
        await until_subscribed(services, 1)
        await breaking_notification(services, settings, 1)
        delivered = await next_message(ws)
        assert delivered["payload"]["data"]["notificationAdded"]["title"] == "Story 1"  # signed in: it streams
        await revoke()
        await breaking_notification(services, settings, 2)
        ended = await next_message(ws)
        assert codes(ended) == ("live", ["UNAUTHENTICATED"]), ended
        assert not (ended["payload"].get("data") or {}).get("notificationAdded")
        assert await next_message(ws) == {"id": "live", "type": "complete"}
        await ws.send(subscribe_message("public", "{ health { ok } }"))  # the socket goes on, anonymous
        assert (await next_message(ws))["payload"]["data"] == {"health": {"ok": True}}


async def test_an_idle_subscription_ends_within_a_keepalive_interval_and_not_for_another_session(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    quick = settings.model_copy(update={"ws_keepalive_seconds": 0.5})
    token = await sign_up(gql, "idle@example.com")
    other_session = (await log_in(gql, "idle@example.com"))["token"]
    async with (
        serve_api(quick, dataclasses.replace(services, settings=quick)) as url,
        ws_connection(url, token=token) as ws,
    ):
        await ws.send(subscribe_message("live", document("NotificationAdded")))
        await until_subscribed(services, 1)
        await gql.as_(other_session).run("LogOut")  # another session of the same reader: this one goes on
        with pytest.raises(TimeoutError):  # nothing comes while checks pass (the server's pings answered)
            async with asyncio.timeout(2):
                await next_message(ws, seconds=None)
        assert services.notifications.subscriptions() == 1
        await gql.as_(token).run("LogOut")
        async with asyncio.timeout(10):  # pings come every interval: each answered, none ends the wait
            ended = await next_message(ws, seconds=None)
            assert codes(ended) == ("live", ["UNAUTHENTICATED"]), ended
            assert await next_message(ws, seconds=None) == {"id": "live", "type": "complete"}
    assert services.notifications.subscriptions() == 0


async def test_the_graphql_ws_client_sees_its_subscription_end_when_it_signs_out(
    node: str, api_url: str, gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    token, revoke = await credential(gql, "session")
    async with reference_client(node, api_url, token, "NotificationAdded", "2") as (client, frames):
        assert await anext(frames) == {"connected": True}
        assert await anext(frames) == {"viewer": {"data": {"viewer": {"email": "session@example.com"}}}}
        await until_subscribed(services, 1)
        await revoke()
        await breaking_notification(services, settings, 3)
        ended = (await anext(frames))["next"]
        assert ended["data"] is None
        assert [e["extensions"]["code"] for e in ended["errors"]] == ["UNAUTHENTICATED"]
        assert [frame async for frame in frames] == [{"complete": True}, {"closed": 1000}]
        assert await asyncio.wait_for(client.wait(), 20) == 0


async def test_a_credential_check_that_succeeds_does_not_end_the_notification_routers_outage(
    gql: GraphQLClient, services: Services, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """Given the notification router's reads finding PostgreSQL away, when a live subscription's credential check
    succeeds, then the router's outage goes on (only its own reads say PostgreSQL is back): the check is a part
    of its own."""
    token = await sign_up(gql, "checked@example.com")
    context = Context.create(services, JobQueue(settings))
    context.connection_params = {"authorization": f"Bearer {token}"}
    reader = await authenticated(context)
    assert reader is not None
    assert services.notifications.database.noted(ConnectionRefusedError("PostgreSQL away"))
    with caplog.at_level(logging.INFO, logger="app.resilience.outage"):
        await still_signed_in(context, reader)
        assert "back after" not in caplog.text
        services.notifications.database.ended()  # its own read succeeded
        assert "notifications: PostgreSQL back after" in caplog.text
