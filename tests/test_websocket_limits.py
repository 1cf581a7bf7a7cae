"""WebSocket limits as a client meets them: connection_init's credential (4403), an operation rate and its flood
close (4429), a message size cap (1009), connections per client across API processes (4429), each counted."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import websockets
from prometheus_client import REGISTRY

from app.realtime.budget import OperationBudget, Verdict
from app.realtime.connections import ConnectionLeases
from app.services import Services
from app.settings import Settings
from app.stories.velocity import BREAKING_TOPIC
from tests.conftest import GraphQLClient, document, next_message, serve_api, subscribe_message, until_listening
from tests.newsroom import sign_up

TYPENAME = "{ __typename }"


def counted(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def opened(url: str, payload: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Any:
    """A graphql-transport-ws socket that sent connection_init with `payload`; the caller closes it."""
    ws = await websockets.connect(url.replace("http://", "ws://") + "/graphql", additional_headers=headers or {},
                                  subprotocols=["graphql-transport-ws"])  # type: ignore[list-item]  # fmt: skip
    await ws.send(json.dumps({"type": "connection_init", "payload": payload or {}}))
    return ws


async def close_code(ws: Any) -> int:
    """The code the server closed `ws` with, reading (and dropping) whatever came before."""
    with pytest.raises(websockets.ConnectionClosed) as closed:  # noqa: PT012
        while True:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code


@pytest.fixture
async def api_key(gql: GraphQLClient) -> str:
    token = await sign_up(gql, "ws-limits@example.com")
    created = await gql.as_(token).post(document("ApiKeyCreate"), {"name": "ticker"})
    key: str = created["data"]["apiKeyCreate"]["key"]
    return key


@pytest.mark.parametrize("payload", [{"authorization": "Bearer nst_made-up"}, {"apiKey": "nak_made-up"},
                                     {"authorization": "Basic dXNlcjpwYXNz"}, {"token": "whatever"}])  # fmt: skip
async def test_a_bad_credential_is_refused_with_4403(api_url: str, services: Services, payload: dict[str, str]) -> None:
    before = counted("newsagg_ws_refusals_total", reason="forbidden")
    ws = await opened(api_url, payload)
    assert await close_code(ws) == 4403
    assert counted("newsagg_ws_refusals_total", reason="forbidden") == before + 1


async def test_an_api_key_in_connection_init_makes_the_viewer(api_url: str, api_key: str) -> None:
    ws = await opened(api_url, {"apiKey": api_key})
    try:
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await ws.send(subscribe_message("me", document("Viewer")))
        answer = await next_message(ws)
        assert answer["payload"]["data"]["viewer"]["email"] == "ws-limits@example.com"
    finally:
        await ws.close()


async def test_an_operation_flood_gets_typed_errors_then_a_4429_close(settings: Settings, services: Services) -> None:
    slow = settings.model_copy(update={"ws_operations_burst": 5, "ws_operations_per_second": 0.001})
    before = counted("newsagg_ws_refusals_total", reason="too_many_operations")
    async with serve_api(slow, services) as url:
        ws = await opened(url)
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        for operation in range(1, 11):
            await ws.send(subscribe_message(str(operation), TYPENAME))
        refused = []
        with pytest.raises(websockets.ConnectionClosed) as closed:  # noqa: PT012
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if message["type"] == "error":
                    refused.append((message["id"], message["payload"][0]["extensions"]["code"]))
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 4429
    # five within the burst, four refused, and the fifth past the budget ends the connection
    assert refused == [(str(n), "TOO_MANY_OPERATIONS") for n in range(6, 10)]
    assert counted("newsagg_ws_refusals_total", reason="too_many_operations") == before + 4


async def test_a_message_over_the_size_cap_closes_the_socket_with_1009(settings: Settings,
                                                                       services: Services) -> None:  # fmt: skip
    capped = settings.model_copy(update={"ws_max_message_bytes": 4096})
    async with serve_api(capped, services) as url:
        ws = await opened(url)
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        padded = "{ __typename" + " " * 3900 + "}"  # just under the cap: served
        await ws.send(subscribe_message("fits", padded))
        assert (await next_message(ws))["payload"]["data"] == {"__typename": "Query"}
        await ws.send(subscribe_message("big", "{ __typename" + " " * 1_000_000 + "}"))
        assert await close_code(ws) == 1009


async def held(url: str, payload: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Any:
    ws = await opened(url, payload, headers)
    assert json.loads(await ws.recv())["type"] == "connection_ack"
    return ws


async def test_a_client_holds_so_many_connections_across_api_processes(settings: Settings, services: Services,
                                                                       api_key: str) -> None:  # fmt: skip
    capped = settings.model_copy(update={"ws_max_connections_per_client": 2})
    first, second = Services.open(capped), Services.open(capped)
    leases = ConnectionLeases(services.redis)
    try:
        async with serve_api(capped, first) as one, serve_api(capped, second) as two:
            sockets = [await held(one, {"apiKey": api_key}), await held(two, {"apiKey": api_key})]
            assert await close_code(await opened(two, {"apiKey": api_key})) == 4429  # the third, on either process
            anonymous = await held(one)  # another client: this address, anonymously
            await sockets.pop().close()
            async with asyncio.timeout(10):
                while await leases.count("user:1") > 1:  # noqa: ASYNC110 (the server releases it as it closes)
                    await asyncio.sleep(0.01)
            sockets.append(await held(one, {"apiKey": api_key}))  # room again
            for ws in [*sockets, anonymous]:
                await ws.close()
    finally:
        await first.close()
        await second.close()


async def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_connections(settings: Settings) -> None:
    """Given a proxy the operator trusts and one connection per client, when two clients connect through it, then
    each is admitted (the proxy's address is not the client), and a second socket of the first is refused."""
    proxied = settings.model_copy(update={"ws_max_connections_per_client": 1,
                                          "rate_limit_trusted_proxies": ["127.0.0.1"]})  # fmt: skip
    opened_services = Services.open(proxied)  # the trusted proxies are the services' (app/ratelimit/policies.py)
    try:
        async with serve_api(proxied, opened_services) as url:
            first = await held(url, headers={"x-forwarded-for": "192.0.2.1"})
            second = await held(url, headers={"x-forwarded-for": "192.0.2.2"})
            assert await close_code(await opened(url, headers={"x-forwarded-for": "192.0.2.1"})) == 4429
            for ws in (first, second):
                await ws.close()
    finally:
        await opened_services.close()


async def test_a_lease_left_by_a_dead_process_runs_out(services: Services) -> None:
    leases = ConnectionLeases(services.redis)
    assert await leases.acquire("address:192.0.2.1", "gone", 1, lease_s=0.001)
    await asyncio.sleep(0.01)  # the process that held it never renews nor releases it
    assert await leases.acquire("address:192.0.2.1", "new", 1, lease_s=30)
    assert not await leases.acquire("address:192.0.2.1", "third", 1, lease_s=30)


async def test_open_connections_and_operations_are_gauged(api_url: str, services: Services) -> None:
    connections, operations = counted("newsagg_ws_connections"), counted("newsagg_ws_operations")
    ws = await held(api_url)
    await ws.send(subscribe_message("b", document("BreakingNews")))
    await until_listening(services, BREAKING_TOPIC)
    assert (counted("newsagg_ws_connections"), counted("newsagg_ws_operations")) == (connections + 1, operations + 1)
    await ws.close()
    async with asyncio.timeout(10):
        while counted("newsagg_ws_connections") > connections:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    assert counted("newsagg_ws_operations") == operations


def test_a_budget_refills_for_a_client_that_slows_down() -> None:
    now = [0.0]
    budget = OperationBudget(rate=2, burst=3, clock=lambda: now[0])
    assert [budget.take() for _ in range(4)] == [Verdict.ALLOWED] * 3 + [Verdict.REFUSED]
    now[0] += 1.0  # two tokens back, one of them owed for the refused operation
    assert [budget.take(), budget.take()] == [Verdict.ALLOWED, Verdict.REFUSED]
    now[0] += 60.0  # a long pause refills the burst, no more
    assert [budget.take() for _ in range(5)] == [Verdict.ALLOWED] * 3 + [Verdict.REFUSED, Verdict.FLOOD]


@pytest.mark.parametrize("frame", ["[]", "42", '"subscribe"', '{"id": "1", "type": "subscribe", "payload": []}'])
async def test_a_message_that_is_not_an_object_closes_with_4400(api_url: str, frame: str) -> None:
    ws = await held(api_url)
    await ws.send(frame)
    assert await close_code(ws) == 4400


async def test_with_redis_down_a_socket_is_admitted_uncounted(settings: Settings) -> None:
    unreachable = settings.model_copy(update={"redis_url": "redis://127.0.0.1:9/0"})  # discard port: refused
    before = counted("newsagg_ws_client_count_failures_total")
    async with serve_api(unreachable) as url:
        ws = await held(url)  # acknowledged
        await ws.close()
    assert counted("newsagg_ws_client_count_failures_total") == before + 1
