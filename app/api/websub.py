"""The WebSub callback: GET verifies a hub's intent, POST receives pushed feed content (signed)."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from app.api.queue import JobQueue
from app.queue_names import INGEST_PUSH
from app.services import Services
from app.websub.service import PushVerdict, accept_push, verify_intent


def websub_routes(services: Callable[[], Services], queue: JobQueue) -> list[Route]:
    async def intent(request: Request) -> Response:
        params = request.query_params
        mode, topic, challenge = params.get("hub.mode", ""), params.get("hub.topic", ""), params.get("hub.challenge")
        lease = params.get("hub.lease_seconds", "")
        current = services()
        async with current.db.begin() as session:
            confirmed = await verify_intent(session, request.path_params["token"], mode, topic,
                                            int(lease) if lease.isdigit() else None, current.settings)  # fmt: skip
        if not confirmed:
            return PlainTextResponse("no such subscription", status_code=404)
        return PlainTextResponse(challenge or "")

    async def push(request: Request) -> Response:
        body = await request.body()  # capped by the API's body limit
        current = services()
        async with current.db.begin() as session:
            verdict, source_id = await accept_push(session, request.path_params["token"], body,
                                                   request.headers.get("x-hub-signature"))  # fmt: skip
        if verdict is PushVerdict.UNKNOWN:
            return PlainTextResponse("no such subscription", status_code=404)
        if verdict is PushVerdict.UNSIGNED:
            return PlainTextResponse("signature required", status_code=403)
        if verdict is PushVerdict.ACCEPTED:
            await queue.enqueue(INGEST_PUSH, source_id, body, request.headers.get("content-type"))
        return PlainTextResponse("accepted", status_code=202)  # a bad signature too: nothing to learn from us

    return [
        Route("/websub/{token}", intent, methods=["GET"]),
        Route("/websub/{token}", push, methods=["POST"]),
    ]
