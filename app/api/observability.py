"""The API's side of observability: a request id for every HTTP request and WebSocket connection (in the scope's
state, the `x-request-id` response header and every log line), HTTP and GraphQL operation metrics, and /metrics."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.extensions import SchemaExtension

from app.api.http import transport_code
from app.observability.multiprocess import exposition
from app.observability.request_id import HEADER, bound, request_id
from app.observability.requests import record_http, record_operation

_STARTS = ("http.response.start", "websocket.accept")  # the messages that carry response headers


class RequestObservation:
    """Outermost middleware: ids every request (an answer from any layer below carries it) and times HTTP ones."""

    def __init__(self, app: ASGIApp, paths: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.paths = paths  # route templates without parameters: a request refused before routing still has one

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        rid = request_id(Headers(scope=scope).get(HEADER))
        scope.setdefault("state", {})["request_id"] = rid
        status = 500  # what the client sees if nothing below answers

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] in _STARTS:
                status = message.get("status", status)
                headers = [*(message.get("headers") or ()), (HEADER.encode(), rid.encode())]
                message = {**message, "headers": headers}
            await send(message)

        started = time.perf_counter()
        with bound(rid):
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                if scope["type"] == "http":
                    record_http(self._route(scope), scope["method"], status, time.perf_counter() - started)

    def _route(self, scope: Scope) -> str | None:
        template = getattr(scope.get("route"), "path", None)
        return template or (scope["path"] if scope["path"] in self.paths else None)


async def metrics(request: Request) -> Response:
    """Prometheus text format: this host's API and worker processes together (app/observability/multiprocess.py)."""
    body, media_type = await asyncio.to_thread(exposition)  # reads every process's file: off the event loop
    return Response(body, media_type=media_type)


class OperationMetrics(SchemaExtension):
    """Counts each GraphQL operation by name, type and outcome, and times queries and mutations."""

    executed = False  # validation passed: an error without a code came from a resolver

    def on_execute(self) -> Iterator[None]:
        self.executed = True
        yield

    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        raised: Exception | None = None
        try:
            yield
        except Exception as error:
            raised = error
            raise
        finally:
            context = self.execution_context
            kind = _kind(context)
            seconds = None if kind == "subscription" else time.perf_counter() - started
            record_operation(context.operation_name, kind, _codes(context, self.executed, raised), seconds)


def _kind(context: Any) -> str:
    try:
        return str(context.operation_type.value)
    except Exception:  # no document, or no such operation in it
        return "unknown"


def _codes(context: Any, executed: bool, raised: Exception | None) -> list[str]:
    """Each error's code as the client got it (the answer's errors, once masked and coded by InternalErrors); an
    error without one is named by the stage that failed."""
    answered = getattr(context.result, "errors", None)
    errors = [raised] if raised is not None else list(answered or context.pre_execution_errors or ())
    stage = (
        "GRAPHQL_PARSE_FAILED" if context.graphql_document is None
        else "INTERNAL_SERVER_ERROR" if executed or raised is not None
        else "GRAPHQL_VALIDATION_FAILED"
    )  # fmt: skip
    return [str(_code(error) or stage) for error in errors]


def _code(error: BaseException) -> str | None:
    """What the client was told: the error's own code, or the HTTP view's for a request strawberry refused."""
    return (getattr(error, "extensions", None) or {}).get("code") or transport_code(error)
