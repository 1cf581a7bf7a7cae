"""The Starlette application: GraphQL over HTTP and WebSocket at /graphql, /healthz and /metrics."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route, WebSocketRoute
from strawberry.http.base import BaseRequestProtocol
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.unset import UNSET, UnsetType

from app.api.context import Context
from app.api.graphiql import GraphiQLPage, graphiql_files
from app.api.http_view import GraphQLOverHTTP
from app.api.limits import BodySizeLimit
from app.api.observability import RequestObservation, metrics
from app.api.queue import JobQueue
from app.api.response_cache import encode_response
from app.api.schema import build_schema
from app.api.share_links import share_link_routes
from app.api.websocket import PONG_INTERVALS, NewsaggTransportWSHandler
from app.api.websub import websub_routes
from app.api.ws_admission import admit
from app.api.ws_messages import sized
from app.health import check_health
from app.services import Services
from app.settings import Settings

# A full (oldest-generation) garbage collection walks every live object: with thousands of WebSockets open that is a
# pause of over a second, which every subscriber of an event then waits out (bench/push.py, 5,000 subscribers: every
# third event took 2 s instead of 0.65 s). Collections start after 100k allocations (not 700) and full ones are rare;
# what startup made (schema, modules) is frozen out of them.
GC_THRESHOLDS = (100_000, 50, 100)


class NewsaggGraphQL(GraphQLOverHTTP):
    graphql_transport_ws_handler_class = NewsaggTransportWSHandler  # pings; a typed error past the operation limit

    def __init__(self, services_ref: dict[str, Services], queue: JobQueue, settings: Settings) -> None:
        super().__init__(
            build_schema(settings),
            graphql_ide="graphiql" if settings.graphiql else None,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            allowed_origins=settings.allowed_origins,
            keep_alive=True,
            keep_alive_interval=settings.ws_keepalive_seconds,
            max_subscriptions_per_connection=settings.ws_max_subscriptions,
        )
        self._services = services_ref
        self._queue = queue
        self._graphiql = GraphiQLPage()
        self.settings = settings
        self.websocket_adapter_class = sized(settings.ws_max_message_bytes)

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        """connection_init: a bad credential is refused (4403), a client past its connections too (4429). A lease
        outlives the pings that renew it by one interval."""
        lease_seconds = (PONG_INTERVALS + 1) * (self.keep_alive_interval or 1)
        await admit(context, self.settings.ws_max_connections_per_client, lease_seconds)
        unset: UnsetType = UNSET
        return unset

    def should_render_graphql_ide(self, request: BaseRequestProtocol) -> bool:
        return "extensions" not in request.query_params and super().should_render_graphql_ide(request)  # a GET by hash

    async def render_graphql_ide(self, request: Request) -> Response:
        return self._graphiql.response()  # ours, with its files served here, not strawberry's page from a CDN

    def encode_json(self, data: object) -> str | bytes:
        return encode_response(data) or super().encode_json(data)

    async def get_context(self, request: Any, response: Any = None) -> Context:
        return Context.create(self._services["services"], self._queue, request, response)


def create_app(settings: Settings, services: Services | None = None) -> Starlette:
    """`services` given: the caller owns them (tests). Otherwise the lifespan opens and closes them."""
    holder: dict[str, Services] = {} if services is None else {"services": services}
    queue = JobQueue(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        owned = services is None
        holder["services"] = services or Services.open(settings)
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        try:
            yield
        finally:
            await queue.close()
            if owned:
                await holder["services"].close()

    async def healthz(request: Request) -> JSONResponse:
        current = holder["services"]
        report = await check_health(current.engine, current.redis, current.search)
        body = {"ok": report.ok, "degraded": report.degraded, **dataclasses.asdict(report)}  # database, redis, search
        return JSONResponse(body, status_code=200 if report.ok else 503)  # 503: PostgreSQL down, take it out

    async def root(request: Request) -> RedirectResponse:
        return RedirectResponse("/graphql")

    graphql_app = NewsaggGraphQL(holder, queue, settings)
    return Starlette(
        routes=[
            Route("/", root),
            Route("/healthz", healthz),
            Route("/metrics", metrics),
            Route("/graphql", graphql_app),
            WebSocketRoute("/graphql", graphql_app),
            *websub_routes(lambda: holder["services"], queue),
            *share_link_routes(lambda: holder["services"]),
            *([graphiql_files()] if settings.graphiql else []),
        ],
        lifespan=lifespan,
        middleware=[
            Middleware(RequestObservation, paths=frozenset({"/", "/healthz", "/metrics", "/graphql"})),  # outermost
            Middleware(BodySizeLimit, max_bytes=settings.api_max_body_bytes),
        ],
    )
