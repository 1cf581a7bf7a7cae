"""GraphQL over WebSocket as the server runs it: operations per connection capped, keep-alive pings, and two API
processes behind one Redis each delivering an event to their own subscribers once."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets
from prometheus_client import REGISTRY

from app.outbox.relay import relay
from app.services import Services
from app.settings import Settings
from app.stories.velocity import BREAKING_TOPIC
from tests.conftest import (
    document,
    next_message,
    serve_api,
    subscribe_message,
    subscribe_ws,
    until_listening,
    ws_connection,
)
from tests.newsroom import add_breaking_event

HEALTH = "{ health { ok } }"


def test_the_defaults() -> None:
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (defaults.ws_max_subscriptions, defaults.ws_keepalive_seconds) == (20, 15)


async def test_past_the_cap_a_subscribe_is_refused_and_the_connection_goes_on(settings: Settings,
                                                                              services: Services) -> None:  # fmt: skip
    capped = settings.model_copy(update={"ws_max_subscriptions": 3})
    async with serve_api(capped, services) as url, ws_connection(url) as ws:
        for operation in ("a", "b", "c"):
            await ws.send(subscribe_message(operation, document("BreakingNews")))
        await until_listening(services, BREAKING_TOPIC, count=3)
        await ws.send(subscribe_message("d", document("BreakingNews")))
        refused = await next_message(ws)
        assert (refused["id"], refused["type"]) == ("d", "error")
        assert refused["payload"][0]["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"
        await ws.send(json.dumps({"id": "a", "type": "complete"}))  # one ends: there is room again
        await ws.send(subscribe_message("e", HEALTH))
        answer = await next_message(ws)
        assert (answer["id"], answer["type"], answer["payload"]["data"]) == ("e", "next", {"health": {"ok": True}})
        assert (await next_message(ws))["type"] == "complete"
        await add_breaking_event(services, 1)  # the operations within the cap still run
        await relay(services.engine, services.redis, [BREAKING_TOPIC])
        delivered = [await next_message(ws) for _ in range(2)]
        assert sorted((m["id"], m["type"]) for m in delivered) == [("b", "next"), ("c", "next")]


async def test_the_server_pings_each_connection_at_its_interval(settings: Settings, services: Services) -> None:
    quick = settings.model_copy(update={"ws_keepalive_seconds": 0.1})
    async with serve_api(quick, services) as url, ws_connection(url) as ws:
        for _ in range(3):  # ping after ping, each answered
            assert json.loads(await asyncio.wait_for(ws.recv(), 10)) == {"type": "ping"}
            await ws.send(json.dumps({"type": "pong"}))
        await ws.send(subscribe_message("h", HEALTH))  # and the connection serves as before
        assert (await next_message(ws))["payload"]["data"] == {"health": {"ok": True}}


async def test_a_peer_that_stops_answering_pings_is_closed(settings: Settings, services: Services) -> None:
    quick = settings.model_copy(update={"ws_keepalive_seconds": 0.1})
    idle_closes = REGISTRY.get_sample_value("newsagg_ws_idle_closes_total") or 0.0
    async with serve_api(quick, services) as url, ws_connection(url) as ws:
        await ws.send(subscribe_message("b", document("BreakingNews")))
        with pytest.raises(websockets.ConnectionClosed) as closed:  # noqa: PT012 (any recv() may meet the close)
            for _ in range(100):  # never a pong: as far as the server can tell, the peer is gone
                await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 4499
    assert REGISTRY.get_sample_value("newsagg_ws_idle_closes_total") == idle_closes + 1
    async with asyncio.timeout(10):
        while services.broadcaster.listeners(BREAKING_TOPIC):  # noqa: ASYNC110 (its subscription ended with it)
            await asyncio.sleep(0.01)


async def test_two_api_processes_behind_one_redis_each_deliver_an_event_once(settings: Settings,
                                                                              services: Services) -> None:  # fmt: skip
    first, second = Services.open(settings), Services.open(settings)  # each its own Redis connection and broadcaster
    try:
        async with serve_api(settings, first) as one, serve_api(settings, second) as two:
            streams = [subscribe_ws(url, document("BreakingNews"), {}) for url in (one, two)]
            nexts = [asyncio.ensure_future(anext(stream)) for stream in streams]
            for process in (first, second):
                await until_listening(process, BREAKING_TOPIC)
            await add_breaking_event(services, 41)
            assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 1
            titles = [(await asyncio.wait_for(n, 10))["payload"]["data"]["breakingNews"]["title"] for n in nexts]
            assert titles == ["Story 41", "Story 41"]
            await add_breaking_event(services, 42)  # once: each client's next is this event, not the first again
            assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 1
            after = [(await asyncio.wait_for(anext(s), 10))["payload"]["data"]["breakingNews"]["title"]
                     for s in streams]  # fmt: skip
            assert after == ["Story 42", "Story 42"]
            for stream in streams:
                await stream.aclose()
    finally:
        await first.close()
        await second.close()
