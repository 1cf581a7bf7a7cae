"""GraphQL-over-WebSocket metrics (prometheus-client; `/metrics` exposes them, summed over the API processes)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

CONNECTIONS = Gauge("newsagg_ws_connections", "WebSockets open on /graphql.", multiprocess_mode="livesum")
OPERATIONS = Gauge(
    "newsagg_ws_operations", "Operations (subscriptions mostly) running on WebSockets.", multiprocess_mode="livesum"
)
REFUSALS = Counter(
    "newsagg_ws_refusals",
    "WebSocket connections and operations refused, by reason: forbidden (bad credential, 4403), too_many_connections "
    "(per client, 4429), too_many_subscriptions, too_many_operations (rate), flood (closed 4429), message_too_large "
    "(closed 1009), persisted_query (a subscribe's hash refused).",
    ["reason"],
)
IDLE_CLOSES = Counter("newsagg_ws_idle_closes", "WebSockets closed after missing keep-alive pongs (4499).")
CLIENT_COUNT_FAILURES = Counter(
    "newsagg_ws_client_count_failures",
    "Connections admitted without counting them against their client's cap because Redis did not answer.",
)
