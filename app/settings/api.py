"""The GraphQL API's edge: documents, limits, WebSockets, accounts and rate limits."""

from __future__ import annotations

import ipaddress

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings


class ApiSettings(BaseSettings):
    """The GraphQL API's edge (part of `app.settings.Settings`)."""

    # --- API ---------------------------------------------------------------------------------------------------------
    api_host: str = Field(default="127.0.0.1", description="Interface the API binds to.")
    api_port: int = Field(default=8000, description="Port of the API (GraphQL at /graphql).")
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Extra browser origins allowed to open GraphQL WebSockets (same-origin is always allowed).",
    )
    api_max_body_bytes: int = Field(
        default=2 * 1024 * 1024, description="Largest request body the API reads (an OPML import is the big one)."
    )
    graphiql: bool = Field(default=True, description="Serve GraphiQL on GET /graphql.")
    page_size_default: int = Field(default=20, description="Connection page size when `first` is omitted.")
    page_size_max: int = Field(default=100, description="Largest `first` a connection accepts.")
    graphql_cache_size: int = Field(
        default=512, description="Parsed and validated documents kept per process (0 turns the caches off)."
    )
    query_max_depth: int = Field(default=12, description="Deepest GraphQL selection accepted.")
    query_max_tokens: int = Field(default=2000, description="Most tokens in one GraphQL document.")
    query_max_aliases: int = Field(
        default=30, description="Most aliases in one GraphQL operation, each counted where its fragment is used."
    )
    query_max_fragment_spreads: int = Field(
        default=100,
        ge=0,
        description="Most fragment spreads in one GraphQL operation, a spread inside a fragment counted each time "
        "that fragment is spread.",
    )
    query_max_nodes: int = Field(
        default=20_000,
        ge=0,
        description="Most nodes one GraphQL operation may ask for (GitHub's rule): each connection's page size "
        "(`first`, else the default page size) times its items' own nodes plus one, down nested connections. "
        "Twice two nested full pages (10,100 nodes); a node takes about half a millisecond to serve.",
    )
    query_nodes_per_point: int = Field(
        default=100,
        ge=1,
        description="Nodes one point buys: an operation costs its nodes / this, rounded up, when that is more "
        "than GitHub's cost (a page of 100, about 40 ms of the API's time, is a point either way).",
    )
    query_max_cost: int = Field(
        default=1000,
        ge=1,
        description="Most points one GraphQL operation may cost: GitHub's rule (connections requested, each "
        "multiplied by the page sizes above it, / 100, at least 1), or its nodes' points if more.",
    )
    ws_max_subscriptions: int = Field(
        default=20, ge=1, description="Operations one WebSocket may run at once; past it a subscribe gets an error."
    )
    ws_keepalive_seconds: float = Field(
        default=15,
        gt=0,
        description="The server pings every WebSocket (graphql-transport-ws `ping`) this often; a reader's own "
        "subscription (`notificationAdded`) checks its credential again as often while no notification comes.",
    )
    ws_operations_per_second: float = Field(
        default=10,
        gt=0,
        description="Operations (and pings) one WebSocket may send per second, on average; past it "
        "an operation gets a TOO_MANY_OPERATIONS error.",
    )
    ws_operations_burst: int = Field(
        default=30,
        ge=1,
        description="Operations a WebSocket may send at once before the per-second rate applies; "
        "refused ones count too, and this many past it close the socket with 4429.",
    )
    ws_max_message_bytes: int = Field(
        default=64 * 1024, ge=1024, description="Largest WebSocket message read; a bigger one closes the socket (1009)."
    )
    ws_max_connections_per_client: int = Field(
        default=50,
        ge=1,
        description="WebSockets one client (signed-in user, else its address, through the trusted proxies) may hold "
        "open across every API process; past it connection_init is answered by a close with 4429.",
    )
    persisted_queries: bool = Field(
        default=True,
        description="Automatic persisted queries (Apollo's `extensions.persistedQuery`): a client may "
        "send a document's SHA-256 instead of its text once the API has seen it.",
    )
    persisted_query_seconds: int = Field(
        default=7 * 24 * 3600, ge=60, description="A persisted query is kept in Redis this long after its last use."
    )
    persisted_query_max_bytes: int = Field(
        default=32 * 1024, ge=1024, description="Largest document kept as a persisted query (longer ones still run)."
    )
    trusted_documents_only: bool = Field(
        default=False,
        description="Run only trusted documents: those in `graphql/` and those registered with "
        "`newsagg documents register`; any other is refused with PERSISTED_QUERY_NOT_ALLOWED.",
    )
    open_source_admin: bool = Field(
        default=False,
        description="Let any caller add, import, refresh and edit sources; when false (the default), only "
        "administrators (`newsagg users grant-admin EMAIL`) may. Authority and sourceDelete stay with administrators "
        "either way.",
    )
    source_delete_batch: int = Field(
        default=500,
        ge=1,
        le=10_000,
        description="sourceDelete removes a source's articles this many per transaction (stories repaired in each): "
        "a large source never holds locks for long.",
    )
    session_days: float = Field(default=30, description="A sign-in token expires this many days after it was issued.")
    auth_cache_seconds: float = Field(
        default=5,
        ge=0,
        description="An API process reuses a checked token or key this long (0: check every request); "
        "signing out or revoking a key takes effect at once on the process that did it, within this on the others.",
    )

    # --- rate limits (DESIGN §6: token buckets in Redis shared by every API process) ---------------------------------
    rate_limit_enabled: bool = Field(
        default=True, description="Meter GraphQL requests and account attempts against the budgets that follow."
    )
    rate_limit_points: int = Field(
        default=5000,
        ge=1,
        description="Points an API key or a signed-in user may spend per window, GitHub's way: a query costs its "
        "connections' requested items / 100 (at least 1); a bucket refills steadily over the window.",
    )
    rate_limit_anonymous_points: int = Field(
        default=1000,
        ge=1,
        description="Points per window for callers without a credential, per client address "
        "(an IPv6 address: per /64).",
    )
    rate_limit_window_seconds: float = Field(default=3600, gt=0, description="Window of the points budgets.")
    rate_limit_trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Proxy addresses or CIDRs (e.g. 10.0.0.0/8) whose X-Forwarded-For names the client, for its "
        "points budget and its WebSocket connections; from any other peer the header is ignored.",
    )
    rate_limit_redis_timeout_seconds: float = Field(
        default=0.25,
        gt=0,
        description="A bucket Redis does not answer within this is skipped: the request goes "
        "through unmetered (counted), and Redis is asked again after a second.",
    )
    account_attempts_per_address: int = Field(
        default=30,
        ge=1,
        description="logIn, signUp and apiKeyCreate attempts per client address and window, each "
        "operation its own bucket (refused before any password is hashed).",
    )
    account_attempts_per_account: int = Field(
        default=10, ge=1, description="logIn, signUp and apiKeyCreate attempts per account (email or user) and window."
    )
    account_attempts_window_seconds: float = Field(default=900, gt=0, description="Window of the attempt buckets.")

    @field_validator("rate_limit_trusted_proxies")
    @classmethod
    def _networks(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            ipaddress.ip_network(entry.strip(), strict=False)  # a typo fails at start, not silently per request
        return entries
