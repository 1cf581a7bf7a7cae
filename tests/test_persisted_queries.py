"""Automatic persisted queries as Apollo clients speak them (POST, GET, WebSocket), and trusted-documents-only mode:
only `graphql/` documents and those registered with `newsagg documents register` run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from app.documents.persisted import KEY_PREFIX
from app.services import Services
from app.settings import Settings
from tests.conftest import document, newsagg, next_message, serve_api, ws_connection
from tests.test_rate_limits import limited_api

HEALTH = document("Health")
LOG_OUT = document("LogOut")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def persisted(digest: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": digest}}


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


async def post(http: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = (await http.post("/graphql", json=body)).json()
    return answer


@pytest.fixture
async def http(api_url: str) -> Any:
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as client:
        yield client


async def test_a_query_is_persisted_then_answered_by_its_hash(http: httpx.AsyncClient, services: Services) -> None:
    digest = sha(HEALTH)
    missed = await post(http, {"extensions": persisted(digest)})
    assert missed["errors"] == [{"message": "PersistedQueryNotFound",
                                 "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]  # fmt: skip
    assert missed.get("data") is None
    sent = await post(http, {"query": HEALTH, "extensions": persisted(digest)})
    assert sent["data"]["health"]["ok"] is True
    assert await services.redis.get(KEY_PREFIX + digest) == HEALTH.encode()
    by_hash = await post(http, {"extensions": persisted(digest)})
    assert by_hash["data"]["health"]["ok"] is True
    fetched = await http.get("/graphql", params={"extensions": json.dumps(persisted(digest))},
                             headers={"accept": "*/*"})  # fmt: skip
    assert fetched.status_code == 200
    assert fetched.json()["data"]["health"]["ok"] is True


async def test_a_mutation_by_hash_is_refused_over_get(http: httpx.AsyncClient, services: Services) -> None:
    digest = sha(LOG_OUT)
    assert "errors" not in await post(http, {"query": LOG_OUT, "extensions": persisted(digest)})  # kept (it ran)
    fetched = await http.get("/graphql", params={"extensions": json.dumps(persisted(digest))})
    assert fetched.status_code in (400, 405)
    assert "data" not in fetched.text or fetched.json().get("data") is None


@pytest.mark.parametrize(("extensions", "code"), [
    (persisted(sha(HEALTH + " ")), "PERSISTED_QUERY_HASH_MISMATCH"),
    ({"persistedQuery": {"version": 2, "sha256Hash": sha(HEALTH)}}, "PERSISTED_QUERY_INVALID"),
    (persisted(sha(HEALTH).upper()), "PERSISTED_QUERY_INVALID"),
    (persisted("'; DROP TABLE users; --" * 100), "PERSISTED_QUERY_INVALID"),
    ({"persistedQuery": "x" * 100_000}, "PERSISTED_QUERY_INVALID"),
])  # fmt: skip
async def test_a_bad_hash_is_refused_and_nothing_is_kept(http: httpx.AsyncClient, services: Services,
                                                         extensions: dict[str, Any], code: str) -> None:  # fmt: skip
    answer = await post(http, {"query": HEALTH, "extensions": extensions})
    assert codes(answer) == [code]
    assert answer.get("data") is None
    assert await services.redis.keys(KEY_PREFIX + "*") == []


async def test_an_invalid_document_is_not_kept(http: httpx.AsyncClient, services: Services) -> None:
    broken = "{ nosuchfield }"
    answer = await post(http, {"query": broken, "extensions": persisted(sha(broken))})
    assert answer["errors"]
    assert await services.redis.get(KEY_PREFIX + sha(broken)) is None


async def test_a_subscribe_may_name_its_document_by_hash(api_url: str, http: httpx.AsyncClient,
                                                         services: Services) -> None:  # fmt: skip
    digest = sha(HEALTH)
    await post(http, {"query": HEALTH, "extensions": persisted(digest)})
    refusals = REGISTRY.get_sample_value("newsagg_ws_refusals_total", {"reason": "persisted_query"}) or 0
    async with ws_connection(api_url) as ws:
        await ws.send(json.dumps({"id": "h", "type": "subscribe", "payload": {"extensions": persisted(digest)}}))
        assert (await next_message(ws))["payload"]["data"]["health"]["ok"] is True
        assert (await next_message(ws))["type"] == "complete"
        unknown = persisted(sha("{ __typename }"))
        await ws.send(json.dumps({"id": "u", "type": "subscribe", "payload": {"extensions": unknown}}))
        refused = await next_message(ws)
        assert (refused["id"], refused["type"]) == ("u", "error")
        assert refused["payload"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
        assert REGISTRY.get_sample_value("newsagg_ws_refusals_total", {"reason": "persisted_query"}) == refusals + 1
        text = "{ __typename }"
        await ws.send(json.dumps({"id": "t", "type": "subscribe",
                                  "payload": {"query": text, "extensions": persisted(sha(text))}}))  # fmt: skip
        assert (await next_message(ws))["payload"]["data"] == {"__typename": "Query"}  # it runs, and is not kept
    assert await services.redis.keys(KEY_PREFIX + "*") == [KEY_PREFIX.encode() + digest.encode()]


async def test_trusted_documents_only(settings: Settings, services: Services, tmp_path: Path) -> None:
    trusted = settings.model_copy(update={"trusted_documents_only": True})
    own = tmp_path / "Ticker.graphql"
    own.write_text("query Ticker { __typename }")
    async with serve_api(trusted, services) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        unknown = "{ __typename }"
        assert codes(await post(http, {"query": unknown})) == ["PERSISTED_QUERY_NOT_ALLOWED"]
        assert codes(await post(http, {"query": unknown, "extensions": persisted(sha(unknown))})) == [
            "PERSISTED_QUERY_NOT_ALLOWED"]  # fmt: skip
        assert (await post(http, {"extensions": persisted(sha(HEALTH))}))["data"]["health"]["ok"] is True
        assert (await post(http, {"query": HEALTH}))["data"]["health"]["ok"] is True
        assert codes(await post(http, {"extensions": persisted(sha(own.read_text()))})) == [
            "PERSISTED_QUERY_NOT_FOUND"]  # fmt: skip
        registered = newsagg("documents", "register", str(own),
                             env={"PATH": "/usr/bin:/bin", "DATABASE_URL": str(settings.database_url)})  # fmt: skip
        assert registered.returncode == 0, registered.stderr
        assert registered.stdout.split() == [sha(own.read_text()), "Ticker"]
        assert (await post(http, {"extensions": persisted(sha(own.read_text()))}))["data"] == {"__typename": "Query"}
        async with ws_connection(url) as ws:
            await ws.send(json.dumps({"id": "x", "type": "subscribe", "payload": {"query": unknown}}))
            refused = await next_message(ws)
            assert refused["payload"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_ALLOWED"


async def test_a_document_past_the_size_cap_runs_but_is_not_kept(settings: Settings, services: Services) -> None:
    capped = settings.model_copy(update={"persisted_query_max_bytes": 4096})
    big = "{ __typename" + " " * 1_000_000 + "}"
    async with serve_api(capped, services) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        assert (await post(http, {"query": big, "extensions": persisted(sha(big))}))["data"] == {"__typename": "Query"}
        assert codes(await post(http, {"extensions": persisted(sha(big))})) == ["PERSISTED_QUERY_NOT_FOUND"]
    assert await services.redis.keys(KEY_PREFIX + "*") == []


def operations(outcome: str) -> float:
    samples = (s for m in REGISTRY.collect() if m.name == "newsagg_graphql_operations" for s in m.samples)
    return sum(s.value for s in samples if s.name.endswith("_total") and s.labels.get("outcome") == outcome)


async def test_a_refused_hash_is_counted_and_charged_like_any_request_that_never_ran(settings: Settings) -> None:
    """Given a hash no one sent, when it is asked for twice, then each answer is counted in the operations metric
    by its code, and each costs the point a request that never runs costs."""
    before = operations("PERSISTED_QUERY_NOT_FOUND")
    async with limited_api(settings, rate_limit_anonymous_points=5) as http:
        answers = [await http.post("/graphql", json={"extensions": persisted("0" * 64)}) for _ in range(2)]
    assert [codes(answer.json()) for answer in answers] == [["PERSISTED_QUERY_NOT_FOUND"]] * 2
    assert operations("PERSISTED_QUERY_NOT_FOUND") - before == 2
    assert [answer.headers["x-ratelimit-remaining"] for answer in answers] == ["4", "3"]
