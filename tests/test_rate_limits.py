"""Points budgets at the API's edge: headers, 429 + Retry-After, `rateLimit`, buckets per caller, proxies, WebSocket,
and a limiter that fails open."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text

from app.runtime.embedded import EmbeddedRedis
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from tests.conftest import document, next_message, serve_api, subscribe_message, ws_connection

TYPENAME = "{ __typename }"
SOURCES = "{ sources(first: 1) { edges { node { id } } } }"


@contextlib.asynccontextmanager
async def limited_api(settings: Settings, **limits: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An API process of its own with these limits, and a client of it."""
    tuned = settings.model_copy(update=limits)
    opened = Services.open(tuned)
    try:
        async with serve_api(tuned, opened) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
            yield http
    finally:
        await opened.close()


async def post(http: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None,
               **headers: str) -> httpx.Response:  # fmt: skip
    return await http.post("/graphql", json={"query": query, "variables": variables or {}}, headers=headers)


def codes(response: httpx.Response) -> list[str]:
    return [e["extensions"]["code"] for e in response.json().get("errors") or []]


def refusals(policy: str) -> float:
    return REGISTRY.get_sample_value("newsagg_rate_limit_refusals_total", {"policy": policy}) or 0.0


async def test_over_budget_is_a_429_with_retry_after_and_rate_limited(services: Services, settings: Settings) -> None:
    before = refusals("api_anonymous")
    async with limited_api(settings, rate_limit_anonymous_points=5) as http:
        answers = [await post(http, TYPENAME) for _ in range(6)]
    assert refusals("api_anonymous") - before == 1
    assert [a.status_code for a in answers] == [200] * 5 + [429]
    assert [a.headers["x-ratelimit-remaining"] for a in answers[:5]] == ["4", "3", "2", "1", "0"]
    refused = answers[5]
    limit, used = refused.headers["x-ratelimit-limit"], refused.headers["x-ratelimit-used"]
    assert (limit, used, refused.headers["x-ratelimit-resource"]) == ("5", "5", "graphql")
    assert 0 < int(refused.headers["retry-after"]) <= 720  # one point refills in 3600 s / 5
    assert int(refused.headers["x-ratelimit-reset"]) > 0
    assert "data" not in refused.json()  # nothing ran (GraphQL over HTTP: no data entry)
    assert codes(refused) == ["RATE_LIMITED"]
    assert refused.json()["errors"][0]["extensions"]["retryAfter"] == int(refused.headers["retry-after"])


async def test_a_refused_request_resolves_nothing(services: Services, settings: Settings) -> None:
    async with limited_api(settings, rate_limit_anonymous_points=1) as http:
        await post(http, TYPENAME)
        refused = await post(http, 'mutation { sourceCreate(input: {feedUrl: "https://example.com/rss"}) { errors '
                                   "{ code } } }")  # fmt: skip
    assert refused.status_code == 429
    async with services.db() as session:
        assert await session.scalar(text("SELECT count(*) FROM sources")) == 0


async def test_rate_limit_field_reports_the_budget_and_a_dry_run_costs_nothing(services: Services,
                                                                              settings: Settings) -> None:  # fmt: skip
    async with limited_api(settings, rate_limit_anonymous_points=10) as http:
        first = (await post(http, document("RateLimit"))).json()["data"]["rateLimit"]
        dry = await post(http, "query { rateLimit(dryRun: true) { cost remaining } " + SOURCES[2:])
        after = (await post(http, document("RateLimit"))).json()["data"]["rateLimit"]
    assert {k: first[k] for k in ("limit", "cost", "remaining", "used")} == {"limit": 10, "cost": 1, "remaining": 9,
                                                                          "used": 1}  # fmt: skip
    assert datetime.fromisoformat(first["resetAt"]) > datetime.now(UTC)
    assert dry.json()["data"] == {"rateLimit": {"cost": 1, "remaining": 9}}  # priced, not run
    assert dry.headers["x-ratelimit-remaining"] == "9"
    assert after["remaining"] == 8


async def test_a_dry_run_given_by_variable_is_not_charged(services: Services, settings: Settings) -> None:
    async with limited_api(settings, rate_limit_anonymous_points=3) as http:
        looks = [await post(http, document("RateLimit"), {"dryRun": True}) for _ in range(10)]
    assert {a.json()["data"]["rateLimit"]["remaining"] for a in looks} == {3}


async def test_each_caller_has_a_bucket_of_its_own(services: Services, settings: Settings) -> None:
    """Anonymous callers share their address's budget; a signed-in user and each of their API keys have their own,
    the larger one."""
    async with limited_api(settings, rate_limit_anonymous_points=3, rate_limit_points=4) as http:
        signed = await post(http, document("SignUp"), {"input": {"email": "a@example.com", "password": "x" * 12}})
        bearer = {"authorization": f"Bearer {signed.json()['data']['signUp']['token']}"}
        made = await post(http, document("ApiKeyCreate"), {"name": "app"}, **bearer)
        key = {"authorization": f"Bearer {made.json()['data']['apiKeyCreate']['key']}"}
        anonymous = [(await post(http, TYPENAME)).status_code for _ in range(3)]
        user = [(await post(http, TYPENAME, **bearer)).status_code for _ in range(4)]
        app = [(await post(http, TYPENAME, **key)).status_code for _ in range(5)]
        made_up = await post(http, TYPENAME, authorization="Bearer nak_made-up")
    assert anonymous == [200, 200, 429]  # signUp was the address's first point
    assert user == [200, 200, 200, 429]  # apiKeyCreate was the user's first
    assert app == [200, 200, 200, 200, 429]
    assert made_up.status_code == 429  # a key that does not exist spends the address's budget


async def test_a_spoofed_x_forwarded_for_does_not_change_the_bucket(services: Services, settings: Settings) -> None:
    async with limited_api(settings, rate_limit_anonymous_points=3) as http:
        spoofed = [(await post(http, TYPENAME, **{"x-forwarded-for": f"198.51.100.{i}"})).status_code
                   for i in range(4)]  # fmt: skip
    assert spoofed == [200, 200, 200, 429]


async def test_x_forwarded_for_from_a_trusted_proxy_names_the_client(services: Services, settings: Settings) -> None:
    async with limited_api(settings, rate_limit_anonymous_points=2, rate_limit_trusted_proxies=["127.0.0.0/8"]) as http:
        alice = [(await post(http, TYPENAME, **{"x-forwarded-for": "198.51.100.1"})).status_code for _ in range(3)]
        bob = [(await post(http, TYPENAME, **{"x-forwarded-for": "6.6.6.6, 198.51.100.2"})).status_code
               for _ in range(2)]  # fmt: skip
    assert alice == [200, 200, 429]
    assert bob == [200, 200]


async def test_a_document_that_does_not_parse_or_validate_costs_a_point(services: Services, settings: Settings) -> None:
    async with limited_api(settings, rate_limit_anonymous_points=3) as http:
        invalid = [await post(http, query) for query in ("{ noSuchField }", "{ unclosed", "{ unclosed")]
        valid = await post(http, TYPENAME)
    assert [a.headers["x-ratelimit-remaining"] for a in invalid] == ["2", "1", "0"]
    assert valid.status_code == 429


async def test_over_websocket_the_operation_gets_rate_limited(services: Services, settings: Settings) -> None:
    async with limited_api(settings, rate_limit_anonymous_points=2) as http, ws_connection(str(http.base_url)) as ws:
        await ws.send(subscribe_message("1", TYPENAME))
        assert (await next_message(ws))["type"] == "next"
        assert (await next_message(ws))["type"] == "complete"
        await ws.send(subscribe_message("2", document("ArticleAdded")))  # the second point: it runs
        await ws.send(subscribe_message("3", document("ArticleAdded")))
        refused = await next_message(ws)
        await ws.send(subscribe_message("4", TYPENAME))
        query_refused = await next_message(ws)
    for message, id in ((refused, "3"), (query_refused, "4")):
        assert (message["id"], message["type"]) == (id, "error")
        assert message["payload"][0]["extensions"]["code"] == "RATE_LIMITED"


def unmetered() -> float:
    return REGISTRY.get_sample_value("newsagg_rate_limit_unmetered_total") or 0.0


async def test_with_redis_down_requests_are_answered_unmetered_and_counted(services: Services,
                                                                          settings: Settings) -> None:  # fmt: skip
    before = unmetered()
    async with limited_api(settings, redis_url=f"redis://127.0.0.1:{free_port()}/0",
                           rate_limit_anonymous_points=1) as http:  # fmt: skip
        answers = [await post(http, SOURCES + " ") for _ in range(5)]
        budget = await post(http, document("RateLimit"))
    assert [a.status_code for a in answers] == [200] * 5
    assert all(a.json()["data"]["sources"] == {"edges": []} for a in answers)
    assert "x-ratelimit-remaining" not in answers[0].headers
    assert budget.json()["data"] == {"rateLimit": None}
    assert unmetered() - before == 6


async def test_redis_gone_ten_seconds_then_back_meters_again_from_a_fresh_budget(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    """Redis stopped for ten seconds under a running API and started again on the same port: meanwhile every request
    is answered, promptly and unmetered (counted); then metering resumes by itself, and since the restarted Redis is
    empty, each caller's budget starts afresh."""
    server = EmbeddedRedis(tmp_path / "redis")
    server.start()

    async def bounded(http: httpx.AsyncClient, query: str) -> httpx.Response:
        async with asyncio.timeout(5):  # a hang is a failure, not a slow pass
            return await post(http, query)

    try:
        async with limited_api(settings, redis_url=server.url(), rate_limit_anonymous_points=3) as http:
            metered = [await bounded(http, SOURCES) for _ in range(2)]
            server.stop()  # SIGTERM
            before = unmetered()
            during: list[httpx.Response] = []
            outage_ends = asyncio.get_running_loop().time() + 10
            while asyncio.get_running_loop().time() < outage_ends:
                during.append(await bounded(http, SOURCES))
                await asyncio.sleep(0.25)
            counted = unmetered() - before
            server.start()  # the same port, nothing in it
            async with asyncio.timeout(10):
                while True:
                    back = await bounded(http, TYPENAME)
                    if "x-ratelimit-remaining" in back.headers:
                        break
                    await asyncio.sleep(0.1)
            after = [back] + [await bounded(http, TYPENAME) for _ in range(3)]
    finally:
        server.stop()
    assert [a.headers["x-ratelimit-remaining"] for a in metered] == ["2", "1"]
    assert len(during) >= 20
    assert {a.status_code for a in during} == {200}
    assert all(a.json()["data"]["sources"] == {"edges": []} for a in during)
    assert not any("x-ratelimit-remaining" in a.headers for a in during)
    assert counted == len(during)
    # one point left before the outage; a fresh bucket of 3 after it
    assert [a.status_code for a in after] == [200, 200, 200, 429]
    assert [a.headers["x-ratelimit-remaining"] for a in after[:3]] == ["2", "1", "0"]
    assert codes(after[3]) == ["RATE_LIMITED"]


async def test_a_redis_that_never_answers_costs_its_timeout_not_the_request(services: Services,
                                                                           settings: Settings) -> None:  # fmt: skip
    """A Redis that accepts connections and says nothing (a network partition): the limiter gives up after its
    timeout and lets the request through."""
    held: list[asyncio.StreamWriter] = []

    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    before = unmetered()
    try:
        async with limited_api(settings, redis_url=f"redis://127.0.0.1:{port}/0",
                               rate_limit_redis_timeout_seconds=0.2) as http:  # fmt: skip
            answer = await post(http, SOURCES)
    finally:
        server.close()
        for writer in held:
            writer.close()
    assert answer.status_code == 200
    assert answer.json()["data"]["sources"] == {"edges": []}
    assert unmetered() - before == 1


async def test_the_charge_is_the_query_cost_the_analysis_computed(services: Services, settings: Settings) -> None:
    """What the query analysis prices a document at (Context.extra["query_cost"]) is what is charged: 100 stories,
    each asking one article and its story's coverage (a page of 20), are 201 connections requested, 2 points by
    GitHub's rule, but 2,200 nodes, 22 points."""
    from app.api.context import Context
    from app.api.queue import JobQueue
    from app.api.schema import build_schema

    costly = """{ rateLimit { cost remaining used }
                  stories(first: 100) { edges { node { articles(first: 1) { story { coverage { totalCount } } } } } }
                }"""
    tuned = settings.model_copy(update={"rate_limit_anonymous_points": 30})
    schema = build_schema(tuned)
    limited = Services.open(tuned)
    try:
        first = await schema.execute(costly, context_value=Context.create(limited, JobQueue(tuned)))
        second = await schema.execute(costly, context_value=Context.create(limited, JobQueue(tuned)))
    finally:
        await limited.close()
    assert not first.errors, first.errors
    assert (first.data or {})["rateLimit"] == {"cost": 22, "remaining": 8, "used": 22}
    assert second.errors  # 14 points short, at 30 an hour
    assert second.errors[0].extensions == {"code": "RATE_LIMITED", "retryAfter": pytest.approx(1680, abs=2)}
    assert second.data is None


async def test_thirty_aliased_pages_are_charged_their_nodes(services: Services, settings: Settings) -> None:
    """GitHub's rule prices 30 pages of 100 at 1 point (30 connections requested); their 3,000 nodes make it 30."""
    flood = "{ " + " ".join(f"a{i}: articles(first: 100) {{ edges {{ node {{ id }} }} }}" for i in range(30))
    async with limited_api(settings, rate_limit_anonymous_points=50) as http:
        first = await post(http, flood + " rateLimit { cost used } }")
        second = await post(http, flood + " }")
        page = await post(http, "{ articles(first: 100) { edges { node { id } } } rateLimit { cost used } }")
    assert first.json()["data"]["rateLimit"] == {"cost": 30, "used": 30}
    assert (second.status_code, codes(second)) == (429, ["RATE_LIMITED"])  # 20 points left
    assert page.json()["data"]["rateLimit"] == {"cost": 1, "used": 31}
