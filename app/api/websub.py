"""The WebSub callback: GET verifies a hub's intent, POST receives pushed feed content (signed)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from app.api.queue import JobQueue
from app.queue_names import INGEST_PUSH
from app.services import Services
from app.text.storable import unstorable
from app.websub.pushes import Pushed, receive
from app.websub.service import PushVerdict, accept_push, verify_intent

TOKEN_MAX = 64  # characters, as stored
RETRY = "60"  # seconds a hub whose push was refused (its source's list full) is asked to wait
LEASE_DIGITS = 9  # 31 years: a hub's lease past it is ignored (ours applies), as one in no number at all


def _token(request: Request) -> str | None:
    """The callback's token, when it could be one of ours (a NUL or a lone surrogate never reaches the database)."""
    token: str = request.path_params["token"]
    return token if len(token) <= TOKEN_MAX and unstorable(token) is None else None


def websub_routes(services: Callable[[], Services], queue: JobQueue) -> list[Route]:
    async def intent(request: Request) -> Response:
        params = request.query_params
        mode, topic, challenge = params.get("hub.mode", ""), params.get("hub.topic", ""), params.get("hub.challenge")
        token, lease = _token(request), params.get("hub.lease_seconds", "")
        lease_seconds = int(lease) if lease.isascii() and lease.isdigit() and len(lease) <= LEASE_DIGITS else None
        current = services()
        confirmed = False
        if token is not None:
            async with current.db.begin() as session:
                confirmed = await verify_intent(session, token, mode, topic, lease_seconds, current.settings)
        if not confirmed:
            return PlainTextResponse("no such subscription", status_code=404)
        return PlainTextResponse(challenge or "")

    async def push(request: Request) -> Response:
        body, token = await request.body(), _token(request)  # the body capped by the API's body limit
        if token is None:
            return PlainTextResponse("no such subscription", status_code=404)
        current = services()
        async with current.db.begin() as session:
            verdict, source_id = await accept_push(session, token, body, request.headers.get("x-hub-signature"))
        if verdict is PushVerdict.UNKNOWN:
            return PlainTextResponse("no such subscription", status_code=404)
        if verdict is PushVerdict.UNSIGNED:
            return PlainTextResponse("signature required", status_code=403)
        if verdict is PushVerdict.ACCEPTED and source_id is not None:
            pushed = Pushed(body, request.headers.get("content-type"))
            if not await receive(current.redis, source_id, pushed, most=current.settings.websub_pending_pushes,
                                 enqueue=functools.partial(queue.enqueue, INGEST_PUSH)):  # fmt: skip
                # a flood: its source's list is full, the hub retries later
                return PlainTextResponse("too many pushes waiting", status_code=503, headers={"Retry-After": RETRY})
        return PlainTextResponse("accepted", status_code=202)  # a bad signature too: nothing to learn from us

    return [
        Route("/websub/{token}", intent, methods=["GET"]),
        Route("/websub/{token}", push, methods=["POST"]),
    ]
