"""The graphql-transport-ws connection: strawberry's handler, plus the server's keep-alive pings (its own
`keep_alive` applies only to the legacy graphql-ws protocol), admission at connection_init (app/api/ws_admission.py),
an operation rate and an operation count per connection, persisted queries in subscribe, a context of its own for
each operation, and metrics."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from contextvars import ContextVar
from typing import Any

from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler
from strawberry.subscriptions.protocols.graphql_transport_ws.types import ConnectionInitMessage, SubscribeMessage
from strawberry.types.execution import PreExecutionError

from app.api import persisted
from app.api.context import Context
from app.api.errors import BadRequest
from app.api.ws_admission import LEASE, Lease, TooManyConnections
from app.api.ws_metrics import CONNECTIONS, IDLE_CLOSES, OPERATIONS, REFUSALS
from app.realtime.budget import OperationBudget, Verdict
from app.settings import Settings

PONG_INTERVALS = 2  # a peer that answers nothing for this many ping intervals is closed
FLOOD = 4429  # graphql-transport-ws's "too many" close code: graphql-ws clients do not retry it
DRAWING = ("subscribe", "ping")  # the messages that make the server work, each drawing on the operation budget
_OPERATION: ContextVar[Context | None] = ContextVar("graphql_ws_operation", default=None)  # set in its task only


class NewsaggTransportWSHandler(BaseGraphQLTransportWSHandler[Any, None]):
    """With the view's `keep_alive`, pings every `keep_alive_interval` seconds once the connection is acknowledged
    (proxies keep the socket open, and a dead peer shows when a ping cannot be sent). Refuses a subscribe past the
    view's `max_subscriptions_per_connection` (TOO_MANY_SUBSCRIPTIONS) or past the operation budget
    (TOO_MANY_OPERATIONS) with an `error` message for that operation: the connection and its other operations go
    on, unless the client keeps sending past its budget (closed with 4429)."""

    _pinger: asyncio.Task[None] | None = None
    _heard_at: float = 0.0
    _counted = 0  # operations added to the OPERATIONS gauge by this connection
    _connection: Context

    @property
    def context(self) -> Context:
        """Inside an operation's task (strawberry runs each operation in one), that operation's context; elsewhere
        the connection's, which strawberry builds once at connect and which connection_init fills."""
        return _OPERATION.get() or self._connection

    @context.setter
    def context(self, context: Context) -> None:
        self._connection = context

    async def run_operation(self, operation: Any) -> None:
        """Each query, mutation or subscription runs on a context of its own (Context.for_operation): fresh loaders,
        as a request over HTTP has."""
        _OPERATION.set(self._connection.for_operation())  # this task's and its children's only
        await super().run_operation(operation)

    def on_request_accepted(self) -> None:
        super().on_request_accepted()
        CONNECTIONS.inc()
        self.settings: Settings = self.view.settings  # type: ignore[attr-defined]  # NewsaggGraphQL's
        self._budget = OperationBudget(self.settings.ws_operations_per_second, self.settings.ws_operations_burst)

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        try:
            await super().handle_connection_init(message)  # the view's on_ws_connect admits or refuses (4403)
        except TooManyConnections as refused:
            await self.websocket.close(code=refused.code, reason=refused.reason)
            return
        interval = self.view.keep_alive_interval
        if self.connection_acknowledged and self.view.keep_alive and interval and self._pinger is None:
            self._pinger = asyncio.create_task(self._ping(interval), name="graphql-ws-keepalive")

    async def handle_message(self, message: Any) -> None:
        self._heard_at = time.monotonic()  # any message shows the peer is alive, a pong included
        if not isinstance(message, dict):
            await self.handle_invalid_message("a message must be a JSON object")
            return
        if message.get("type") in DRAWING:
            verdict = self._budget.take()
            if verdict is Verdict.FLOOD:
                REFUSALS.labels("flood").inc()
                await self.close(FLOOD, "too many operations")
                return
            if verdict is Verdict.REFUSED:  # a ping past the budget goes unanswered
                if message["type"] == "subscribe":
                    rate = self._budget.rate
                    await self._refuse(message, "too_many_operations", f"at most {rate:g} operations a second")
                return
        await super().handle_message(message)  # type: ignore[arg-type]

    async def _ping(self, interval: float) -> None:
        """Pings every `interval`; a peer silent for two intervals after a ping (no pong, nothing else) is gone
        without a close (a dropped network, a suspended laptop): its socket is closed with 4499 and its
        subscriptions end, rather than holding them forever. Each ping also renews the connection's lease."""
        self._heard_at = time.monotonic()
        with contextlib.suppress(Exception):  # the socket is gone: the handler shuts down on its own
            while True:
                await asyncio.sleep(interval)
                if time.monotonic() - self._heard_at > PONG_INTERVALS * interval:
                    IDLE_CLOSES.inc()
                    await self.close(4499, "no pong: keep-alive timed out")
                    return
                await self.send_message({"type": "ping"})
                if (lease := self._lease()) is not None:
                    await lease.renew()

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        limit = self.max_subscriptions_per_connection
        if (self.connection_acknowledged and message["id"] not in self.operations and limit is not None
                and len(self.operations) >= limit):  # fmt: skip
            await self._refuse(message, "too_many_subscriptions", f"at most {limit} operations at once on one "
                                                                  "connection")  # fmt: skip
            return
        if self.connection_acknowledged and not await self._resolve_document(message):
            return
        await super().handle_subscribe(message)
        self._recount()

    async def _resolve_document(self, message: SubscribeMessage) -> bool:
        """A persisted query's hash becomes its document (the payload's `query` may then be absent); False when
        the document is refused, the operation having had its error. Documents are kept from HTTP requests only,
        once they ran (app/api/persisted.py): a subscribe reads what is kept, it adds nothing."""
        payload: Any = message["payload"]
        if not isinstance(payload, dict):
            await self.handle_invalid_message("a subscribe payload must be an object")
            return False
        queries = persisted.persisted_queries(self.context, self.settings)
        try:
            resolved = await persisted.resolve(queries, payload.get("query"), payload.get("extensions"))
        except BadRequest as refused:
            REFUSALS.labels("persisted_query").inc()  # over HTTP, the operations metric counts it by its code
            await self.send_message({"id": message["id"], "type": "error", "payload": [refused.formatted]})
            return False
        if resolved is not None:
            payload["query"] = resolved.query
        return True

    async def _refuse(self, message: Any, reason: str, text: str) -> None:
        REFUSALS.labels(reason).inc()
        error = BadRequest(reason.upper(), text)
        await self.send_message({"id": str(message.get("id")), "type": "error", "payload": [error.formatted]})

    async def close(self, code: int, reason: str) -> None:
        """Ends the connection from this side: its operations are cancelled first, so none writes after the close."""
        for operation_id in list(self.operations):
            await self.cleanup_operation(operation_id)
        await self.websocket.close(code=code, reason=reason)

    def forget_id(self, id: str) -> None:
        super().forget_id(id)
        self._recount()

    async def cleanup_operation(self, operation_id: str) -> None:
        await super().cleanup_operation(operation_id)
        self._recount()

    def _recount(self) -> None:
        """The OPERATIONS gauge follows this connection's running operations (strawberry adds and drops them)."""
        OPERATIONS.inc(len(self.operations) - self._counted)
        self._counted = len(self.operations)

    def _lease(self) -> Lease | None:
        lease: Lease | None = self.context.extra.get(LEASE)
        return lease

    async def _send_result_stream(self, operation: Any, result_source: Any) -> None:
        """A subscription the rate limit refused (its charge precedes execution) ends with an `error` message, as a
        refused query or mutation does, rather than a `next` carrying the error."""

        async def refusal_first() -> AsyncGenerator[Any, None]:
            async for result in result_source:
                if not isinstance(result, PreExecutionError) and _rate_limited(result):
                    result = PreExecutionError(data=None, errors=result.errors)
                yield result

        await super()._send_result_stream(operation, refusal_first())

    async def shutdown(self) -> None:
        if self._pinger is not None:
            self._pinger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pinger
        try:
            await super().shutdown()
        finally:
            self._recount()
            CONNECTIONS.dec()
            if (lease := self._lease()) is not None:
                await lease.release()


def _rate_limited(result: Any) -> bool:
    errors = getattr(result, "errors", None) or []
    return len(errors) == 1 and (errors[0].extensions or {}).get("code") == "RATE_LIMITED"
