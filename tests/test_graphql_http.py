"""GraphQL over HTTP by the spec, case by case: media types by Accept, statuses by outcome, typed refusals."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import strawberry
from strawberry.types import Info

from app.api.http import GRAPHQL_RESPONSE, JSON, negotiate
from app.api.http_view import GraphQLOverHTTP
from app.api.request_errors import RequestErrorCodes, label
from app.services import Services
from graphql import GraphQLError
from tests.conftest import GraphQLClient, document, subscribe_ws
from tests.newsroom import PASSWORD, sign_up

BOTH = f"{GRAPHQL_RESPONSE}, {JSON}"


async def post(api_url: str, body: Any, accept: str | None = None, **headers: str) -> httpx.Response:
    headers = {"content-type": JSON, **({"accept": accept} if accept else {}), **headers}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx.AsyncClient() as client:
        return await client.post(f"{api_url}/graphql", content=content, headers=headers)


def codes(response: httpx.Response) -> list[str]:
    return [error["extensions"]["code"] for error in response.json()["errors"]]


@pytest.mark.parametrize(("accept", "media_type"), [
    (None, JSON), ("", JSON), ("*/*", JSON), ("application/*", JSON), (JSON, JSON),
    (GRAPHQL_RESPONSE, GRAPHQL_RESPONSE), (BOTH, GRAPHQL_RESPONSE), (f"{JSON}, {GRAPHQL_RESPONSE}", JSON),
    (f"{JSON};q=0.5, {GRAPHQL_RESPONSE}", GRAPHQL_RESPONSE), (f"{GRAPHQL_RESPONSE};q=0, */*;q=0.1", JSON),
    (f"text/html, {GRAPHQL_RESPONSE};charset=utf-8", GRAPHQL_RESPONSE),
    (f"{GRAPHQL_RESPONSE};q=nonsense", GRAPHQL_RESPONSE),
    ("text/html", None), (f"{JSON};q=0", None), (f"{JSON};q=nan", None), ("text/plain, " * 2000 + "image/png", None),
], ids=range(16))  # fmt: skip
def test_the_media_type_is_the_clients_most_preferred_of_ours(accept: str | None, media_type: str | None) -> None:
    assert negotiate(accept) == media_type


async def test_answers_come_in_the_media_type_the_client_accepts(api_url: str, services: Services) -> None:
    for accept, media_type in ((None, JSON), (BOTH, GRAPHQL_RESPONSE), ("*/*", JSON)):
        response = await post(api_url, {"query": "{ __typename }"}, accept)
        assert (response.status_code, response.json()) == (200, {"data": {"__typename": "Query"}})
        assert response.headers["content-type"] == f"{media_type}; charset=utf-8"
    refused = await post(api_url, {"query": "{ __typename }"}, "text/csv")
    assert (refused.status_code, codes(refused)) == (406, ["NOT_ACCEPTABLE"])
    async with httpx.AsyncClient() as client:  # a browser asking for the page still gets GraphiQL
        assert (await client.get(f"{api_url}/graphql", headers={"accept": "text/html"})).status_code == 200


@pytest.mark.parametrize(("query", "variables", "code"), [
    ("{", None, "GRAPHQL_PARSE_FAILED"),
    ("{ " + "{" * 5000, None, "GRAPHQL_PARSE_FAILED"),
    ("{ noSuchField }", None, "GRAPHQL_VALIDATION_FAILED"),
    ("query($first: Int!) { articles(first: $first) { edges { cursor } } }", {"first": "ten"}, "BAD_USER_INPUT"),
    ("query($first: Int!) { articles(first: $first) { edges { cursor } } }", None, "BAD_USER_INPUT"),
])  # fmt: skip
async def test_request_errors_are_typed_and_400_only_under_graphql_response_json(
    api_url: str, services: Services, query: str, variables: dict[str, Any] | None, code: str
) -> None:
    for accept, status in ((JSON, 200), (None, 200), (BOTH, 400)):
        response = await post(api_url, {"query": query, "variables": variables}, accept)
        assert response.status_code == status, response.text
        assert "data" not in response.json()  # nothing ran: no data entry at all
        assert code in codes(response)
        assert set(codes(response)) == {code}


async def test_an_operation_that_cannot_be_picked_is_a_request_error(api_url: str, services: Services) -> None:
    body = {"query": "query A { __typename } query B { __typename }", "operationName": "C"}
    for accept, status in ((JSON, 200), (BOTH, 400)):
        response = await post(api_url, body, accept)
        assert (response.status_code, codes(response)) == (status, ["OPERATION_RESOLUTION_FAILURE"])
        assert "data" not in response.json()
    named = await post(api_url, {"query": "query A { __typename }", "operationName": ""}, BOTH)
    assert named.json() == {"data": {"__typename": "Query"}}  # an empty name is no name


async def test_a_field_error_is_still_a_200_with_its_data_entry(api_url: str, services: Services) -> None:
    response = await post(api_url, {"query": document("Articles"), "variables": {"after": "garbage"}}, BOTH)
    assert response.status_code == 200
    assert response.json()["data"] is None
    assert codes(response) == ["BAD_CURSOR"]


async def test_a_mutation_over_get_is_405_and_does_not_run(api_url: str, services: Services) -> None:
    variables = json.dumps({"input": {"email": "get@example.com", "password": PASSWORD}})
    async with httpx.AsyncClient(base_url=api_url) as client:
        response = await client.get("/graphql", params={"query": document("SignUp"), "variables": variables})
        refused = (response.status_code, response.headers["allow"], codes(response))
        assert refused == (405, "POST", ["METHOD_NOT_ALLOWED"])
        query = await client.get("/graphql", params={"query": "{ __typename }"}, headers={"accept": BOTH})
        assert (query.status_code, query.json()) == (200, {"data": {"__typename": "Query"}})
        put = await client.put("/graphql", json={"query": "{ __typename }"})
        assert (put.status_code, put.headers["allow"], codes(put)) == (405, "GET, POST", ["METHOD_NOT_ALLOWED"])
        await sign_up(GraphQLClient(client), "get@example.com")  # the address is still free: the GET created nobody


@pytest.mark.parametrize(("content_type", "status"), [(None, 415), ("text/plain", 415),
                                                      ("application/x-www-form-urlencoded", 415),
                                                      ("Application/JSON; charset=utf-8", 200)])  # fmt: skip
async def test_a_post_body_is_json(api_url: str, services: Services, content_type: str | None, status: int) -> None:
    headers = {"content-type": content_type} if content_type else {}
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{api_url}/graphql", content=b'{"query": "{ __typename }"}', headers=headers)
    assert response.status_code == status
    if status == 415:
        assert codes(response) == ["UNSUPPORTED_MEDIA_TYPE"]


TYPENAME = "{ __typename }"
NOT_GRAPHQL_REQUESTS = {
    "empty": b"", "not JSON": b'{ "not a JSON', "not UTF-8": b'{"query": "\xff"}',
    "100k nested arrays": b"[" * 100_000 + b"]" * 100_000,
    "50k nested objects": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "a number": b"5", "a string": b'"query"', "null": b"null", "a list": b"[]", "a batch": b'[{"query": "{ a }"}]',
    "no query": {"notquery": TYPENAME}, "numeric query": {"query": 5}, "list query": {"query": [TYPENAME]},
    "object operationName": {"query": TYPENAME, "operationName": {}},
    "false operationName": {"query": TYPENAME, "operationName": False},
    "string variables": {"query": TYPENAME, "variables": "{}"}, "list variables": {"query": TYPENAME, "variables": [7]},
    "numeric extensions": {"query": TYPENAME, "extensions": 0},
}  # fmt: skip


@pytest.mark.parametrize("body", NOT_GRAPHQL_REQUESTS.values(), ids=NOT_GRAPHQL_REQUESTS.keys())
async def test_what_is_not_a_graphql_request_is_a_typed_400(api_url: str, services: Services, body: Any) -> None:
    for accept in (JSON, BOTH):
        response = await post(api_url, body, accept)
        assert (response.status_code, codes(response)) == (400, ["BAD_REQUEST"]), response.text
        assert response.headers["content-type"].startswith(accept.split(",")[0])


async def test_request_errors_over_websocket_are_typed_too(api_url: str, services: Services) -> None:
    stream = subscribe_ws(api_url, "subscription { noSuchField }", {})
    message = await anext(stream)
    assert message["type"] == "error"
    assert [error["extensions"]["code"] for error in message["payload"]] == ["GRAPHQL_VALIDATION_FAILED"]
    await stream.aclose()


@strawberry.type
class _Query:
    @strawberry.field
    def refused(self, info: Info) -> str:
        info.context["response"].status_code = 429  # what a rate limiter in another layer does
        return "no"


async def test_a_status_another_layer_set_stands() -> None:
    view = GraphQLOverHTTP(strawberry.Schema(query=_Query, extensions=[RequestErrorCodes]))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=view), base_url="http://test") as client:
        response = await client.post("/", json={"query": "{ refused }"}, headers={"accept": BOTH})
    assert (response.status_code, response.json()) == (429, {"data": {"refused": "no"}})


def test_a_code_a_rule_set_is_kept() -> None:
    limited, plain = GraphQLError("too deep", extensions={"code": "QUERY_TOO_DEEP"}), GraphQLError("unknown field")
    label([limited, plain], "GRAPHQL_VALIDATION_FAILED")
    assert [limited.extensions["code"], plain.extensions["code"]] == ["QUERY_TOO_DEEP", "GRAPHQL_VALIDATION_FAILED"]
