"""strawberry's ASGI view, speaking GraphQL over HTTP by the rules of app/api/http.py: each hook here is one rule."""

from __future__ import annotations

import json

from cross_web import AsyncHTTPRequestAdapter, HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.http.parse_content_type import parse_content_type
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType

from app.api.context import Context
from app.api.errors import BadRequest
from app.api.http import (
    JSON,
    UNRESOLVED,
    MutationOverGet,
    is_request_error,
    negotiate,
    refusal,
    status_of,
    well_formed,
)


class GraphQLOverHTTP(GraphQL[Context, None]):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            response = await self.run(request)
        except HTTPException as error:  # strawberry answers these in plain text
            response = refusal(request, error)
        await response(scope, receive, send)

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        """The response's media type is chosen first: a client that accepts none of ours is refused before any work
        (a browser asking for GraphiQL excepted)."""
        sub_response = await super().get_sub_response(request)
        media_type = negotiate(request.headers.get("accept"))
        ide = isinstance(request, Request) and self.should_render_graphql_ide(self.request_adapter_class(request))
        if media_type is None and not ide:
            raise HTTPException(406, "Answers are application/graphql-response+json or application/json.")
        sub_response.media_type = media_type or JSON
        return sub_response

    def decode_json(self, data: str | bytes) -> object:
        """Bytes that are not UTF-8, JSON nested past Python's recursion limit, or with an integer past the 4,300
        digits Python reads, are not JSON either (a 400; over WebSocket, a close with 4400)."""
        try:
            return json.loads(data)
        except json.JSONDecodeError:
            raise
        except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
            raise json.JSONDecodeError(f"not readable JSON ({type(error).__name__})", "", 0) from error

    async def parse_http_body(self, request: AsyncHTTPRequestAdapter) -> GraphQLRequestData:
        if request.method == "GET":
            return well_formed(self.parse_query_params(request.query_params))
        content_type, _ = parse_content_type(request.content_type or "")
        if content_type.lower() != JSON:
            raise HTTPException(415, "A GraphQL request is sent as application/json.")
        return well_formed(self.parse_json(await request.get_body()))

    async def execute_single(self, request: Request, request_adapter: AsyncHTTPRequestAdapter,
                             sub_response: Response, context: Context, root_value: None,
                             request_data: GraphQLRequestData) -> ExecutionResult:  # fmt: skip
        """A mutation over GET is 405 (it must not run), and an operation that cannot be picked out of the document
        is a request error, as the spec has it, rather than strawberry's plain-text 400."""
        try:
            return await super().execute_single(request, request_adapter, sub_response, context, root_value,
                                                request_data)  # fmt: skip
        except HTTPException as error:
            cause = error.__cause__
            if isinstance(cause, InvalidOperationTypeError) and cause.operation_type is OperationType.MUTATION:
                raise MutationOverGet from cause
            if isinstance(cause, CannotGetOperationTypeError):
                return PreExecutionError(data=None, errors=[BadRequest(UNRESOLVED, error.reason)])
            raise

    async def process_result(self, request: Request, result: ExecutionResult) -> GraphQLHTTPResponse:
        response = await super().process_result(request, result)
        if is_request_error(result):
            response.pop("data", None)  # the GraphQL spec: no data entry when execution never began
        return response

    def create_response(self, response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
                        sub_response: Response) -> Response:  # fmt: skip
        """A status another layer set (429 from the rate limiter) stands; otherwise the spec's status."""
        response = super().create_response(response_data, sub_response)
        media_type = sub_response.media_type or JSON
        response.headers["content-type"] = f"{media_type}; charset=utf-8"
        if not sub_response.status_code and isinstance(response_data, dict):
            response.status_code = status_of(response_data, media_type)
        return response
