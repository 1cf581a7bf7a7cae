"""The graphql-transport-ws connection: strawberry's handler, plus the server's keep-alive pings (its own
`keep_alive` applies only to the legacy graphql-ws protocol) and a typed error past the per-connection limit."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from typing import Any

from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler
from strawberry.subscriptions.protocols.graphql_transport_ws.types import ConnectionInitMessage, SubscribeMessage
from strawberry.types.execution import PreExecutionError

from app.api.errors import BadRequest

PONG_INTERVALS = 2  # a peer that answers nothing for this many ping intervals is closed


class NewsaggTransportWSHandler(BaseGraphQLTransportWSHandler[Any, None]):
    """With the view's `keep_alive`, pings every `keep_alive_interval` seconds once the connection is acknowledged
    (proxies keep the socket open, and a dead peer shows when a ping cannot be sent). Refuses a subscribe past the
    view's `max_subscriptions_per_connection` with an `error` message for that operation (code
    TOO_MANY_SUBSCRIPTIONS): the connection and its other operations go on."""

    _pinger: asyncio.Task[None] | None = None

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        await super().handle_connection_init(message)
        interval = self.view.keep_alive_interval
        if self.connection_acknowledged and self.view.keep_alive and interval and self._pinger is None:
            self._pinger = asyncio.create_task(self._ping(interval), name="graphql-ws-keepalive")

    _heard_at: float = 0.0

    async def handle_message(self, message: Any) -> None:
        self._heard_at = time.monotonic()  # any message shows the peer is alive, a pong included
        await super().handle_message(message)

    async def _ping(self, interval: float) -> None:
        """Pings every `interval`; a peer silent for two intervals after a ping (no pong, nothing else) is gone
        without a close (a dropped network, a suspended laptop): its socket is closed with 4499 and its
        subscriptions end, rather than holding them forever."""
        self._heard_at = time.monotonic()
        with contextlib.suppress(Exception):  # the socket is gone: the handler shuts down on its own
            while True:
                await asyncio.sleep(interval)
                if time.monotonic() - self._heard_at > PONG_INTERVALS * interval:
                    await self.websocket.close(code=4499, reason="no pong: keep-alive timed out")
                    return
                await self.send_message({"type": "ping"})

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        limit = self.max_subscriptions_per_connection
        if (self.connection_acknowledged and message["id"] not in self.operations and limit is not None
                and len(self.operations) >= limit):  # fmt: skip
            error = BadRequest("TOO_MANY_SUBSCRIPTIONS", f"at most {limit} operations at once on one connection")
            await self.send_message({"id": message["id"], "type": "error", "payload": [error.formatted]})
            return
        await super().handle_subscribe(message)

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
        await super().shutdown()


def _rate_limited(result: Any) -> bool:
    errors = getattr(result, "errors", None) or []
    return len(errors) == 1 and (errors[0].extensions or {}).get("code") == "RATE_LIMITED"
