"""WebSocket messages read with a size cap: a bigger one closes the socket with 1009 (Message Too Big) before it is
parsed. `newsagg api` also gives uvicorn the same cap, which then refuses such a frame before buffering all of it."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from json import JSONDecodeError

from starlette.websockets import WebSocketDisconnect, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.http.exceptions import NonJsonMessageReceived, NonTextMessageReceived

from app.api.ws_metrics import REFUSALS

TOO_BIG = 1009


class SizedWebSocketAdapter(ASGIWebSocketAdapter):
    max_bytes = 64 * 1024  # the view sets the setting's value on its subclass

    async def iter_json(self, *, ignore_parsing_errors: bool = False) -> AsyncGenerator[object, None]:
        try:
            while self.ws.application_state != WebSocketState.DISCONNECTED:
                text = await self.ws.receive_text()
                if len(text) > self.max_bytes or len(text.encode()) > self.max_bytes:
                    REFUSALS.labels("message_too_large").inc()
                    await self.ws.close(code=TOO_BIG, reason=f"message over {self.max_bytes} bytes")
                    return
                try:
                    yield self.view.decode_json(text)
                except JSONDecodeError as e:
                    if not ignore_parsing_errors:
                        raise NonJsonMessageReceived from e
        except KeyError as e:
            raise NonTextMessageReceived from e
        except WebSocketDisconnect:
            pass


def sized(max_bytes: int) -> type[SizedWebSocketAdapter]:
    return type("SizedWebSocketAdapter", (SizedWebSocketAdapter,), {"max_bytes": max_bytes})
