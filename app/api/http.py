"""GraphQL over HTTP as its specification words it: the media type by Accept, the status by outcome, typed refusals."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from cross_web import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from strawberry.exceptions import MissingQueryError
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
# What an Accept entry asks of ours. A client that sends none, or */*, gets application/json: what clients written
# before graphql-response+json (and graphql-http's audit) expect; one that names it gets it.
OURS = {GRAPHQL_RESPONSE: GRAPHQL_RESPONSE, JSON: JSON, "application/*": JSON, "*/*": JSON}
PARAMETERS = {"query": str, "operationName": str, "variables": dict, "extensions": dict}
UNRESOLVED = "OPERATION_RESOLUTION_FAILURE"  # the document has no operation by the name asked, or several and none


def negotiate(accept: str | None) -> str | None:
    """The media type to answer in: the client's most preferred of ours (the first listed among equals); None when
    it accepts none of them (406)."""
    if not accept or not accept.strip():
        return JSON
    offers = []
    for position, entry in enumerate(accept.split(",")):
        kind, *parameters = (part.strip() for part in entry.split(";"))
        quality = _quality(parameters)
        if (ours := OURS.get(kind.lower())) and quality > 0:  # q=0: "not this one"; NaN is refused too
            offers.append((-quality, position, ours))
    return min(offers)[2] if offers else None


def _quality(parameters: list[str]) -> float:
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 1.0  # an unreadable weight does not make the type unacceptable
    return 1.0


def is_request_error(result: ExecutionResult) -> bool:
    """Nothing was executed (the document did not parse or validate, its variables did not fit, the request was
    refused): such a response has no `data` entry. A field error always has a path."""
    errors = result.errors or []
    return result.data is None and bool(errors) and all(error.path is None for error in errors)


def status_of(response: GraphQLHTTPResponse, media_type: str) -> int:
    """application/json says 200 to every GraphQL request (a proxy's 4xx must not pass for ours); graphql-response
    +json says 4xx, or 5xx for our own failure, to a request that was not executed."""
    if media_type != GRAPHQL_RESPONSE or "data" in response:
        return 200
    errors: list[Any] = response.get("errors") or []
    codes = {(error.get("extensions") or {}).get("code") for error in errors}
    return 500 if "INTERNAL_SERVER_ERROR" in codes else 400


def transport_code(error: BaseException) -> str | None:
    """The code the view answers with when strawberry refused a request outside GraphQL's errors (no query, no
    operation to pick, an operation the method may not run); None for any other exception."""
    if isinstance(error, CannotGetOperationTypeError):
        return UNRESOLVED
    if isinstance(error, InvalidOperationTypeError) and error.operation_type is OperationType.MUTATION:
        return HTTPStatus.METHOD_NOT_ALLOWED.name  # MutationOverGet: mutations are refused over GET only
    if isinstance(error, InvalidOperationTypeError | MissingQueryError):
        return HTTPStatus.BAD_REQUEST.name
    return None


def well_formed(data: object) -> GraphQLRequestData:
    """The GraphQL-over-HTTP request in `data` (a JSON body or the URL's parameters), or a 400 saying what is
    wrong with it. A missing `query` is left to the schema (an extension may supply it)."""
    if not isinstance(data, dict):
        raise HTTPException(400, "A GraphQL request is a JSON object.")
    for name, kind in PARAMETERS.items():
        if data.get(name) is not None and not isinstance(data[name], kind):
            raise HTTPException(400, f"`{name}` must be {'a string' if kind is str else 'an object'} or null.")
    return GraphQLRequestData(query=data.get("query"), variables=data.get("variables"),
                              operation_name=data.get("operationName") or None,  # "": no name, as GET says
                              extensions=data.get("extensions"))  # fmt: skip


def refusal(request: Request, error: HTTPException) -> Response:
    """A request that is not a GraphQL request, answered as a GraphQL response with a typed error."""
    body = {"errors": [{"message": error.reason, "extensions": {"code": HTTPStatus(error.status_code).name}}]}
    headers = {"allow": getattr(error, "allow", "GET, POST")} if error.status_code == 405 else {}
    media_type = negotiate(request.headers.get("accept")) or JSON
    return Response(json.dumps(body), error.status_code, headers, f"{media_type}; charset=utf-8")


class MutationOverGet(HTTPException):
    allow = "POST"

    def __init__(self) -> None:
        super().__init__(405, "Mutations are sent with POST: GET is for queries.")
