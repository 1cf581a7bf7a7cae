"""The webhook delivery worker: due deliveries claimed with a lease (at least once), POSTed concurrently, each
outcome recorded with its log line. A failure is retried after an exponential back-off with full jitter; after
`notify_max_attempts` attempts, or at once when the address is refused (SSRF guard) or the URL is invalid, the
delivery is dead, for an administrator to list and replay. An unexpected error fails its own delivery only."""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from app.notifications import delivery_repository as deliveries
from app.notifications.webhooks import Outcome, body_of, post
from app.observability.alerts import count_deliveries
from app.settings import Settings

log = logging.getLogger(__name__)
CLAIM = 500  # deliveries one round claims


@dataclass
class DeliveryReport:
    delivered: int = 0
    failed: int = 0
    dead: int = 0


async def deliver_webhooks(engine: AsyncEngine, client: httpx.AsyncClient, settings: Settings,
                           *, rounds: int = 20) -> DeliveryReport:  # fmt: skip
    """Delivers what is due, round after round until a round comes back short (or `rounds` were run)."""
    report = DeliveryReport()
    for _ in range(rounds):
        if await _round(engine, client, settings, report) < CLAIM:
            break
    return report


def lease_seconds(settings: Settings) -> float:
    """How long a round holds its deliveries: every POST ends within the timeout and at most `webhook_concurrency`
    are in flight, so a full round posts within ceil(CLAIM / concurrency) timeouts; four more are for recording.
    A worker that dies (or loses PostgreSQL) mid-round leaves its deliveries to be taken again after that."""
    return settings.webhook_timeout_seconds * (math.ceil(CLAIM / settings.webhook_concurrency) + 4)


async def _round(engine: AsyncEngine, client: httpx.AsyncClient, settings: Settings, report: DeliveryReport) -> int:
    lease = lease_seconds(settings)
    async with engine.begin() as connection:
        claimed = await deliveries.claim(connection, "webhook", limit=CLAIM, lease_seconds=lease)
        targets = await deliveries.endpoints(connection, list({row.endpoint_id for row in claimed}))
    gate = asyncio.Semaphore(settings.webhook_concurrency)

    async def attempt(row: Any) -> Outcome:
        endpoint = targets.get(row.endpoint_id)
        if endpoint is None or not endpoint.live:
            return Outcome(False, True, None, "the endpoint was removed or deactivated", 0.0)
        async with gate:
            return await _posted(client, settings, row, endpoint)

    outcomes = await asyncio.gather(*(attempt(row) for row in claimed))
    recorded: list[tuple[int, str, float, str | None, int | None, float | None]] = []
    for row, outcome in zip(claimed, outcomes, strict=True):
        status, wait = settings.notify_retries.settle(row.attempts, not outcome.delivered, permanent=outcome.permanent)
        setattr(report, status, getattr(report, status) + 1)
        recorded.append((row.id, status, wait, outcome.error, outcome.status_code, outcome.duration_ms))
        if status == "dead":
            log.warning("notifications: webhook delivery %s is dead after %d attempt(s): %s", row.idempotency_key,
                        row.attempts, outcome.error)  # fmt: skip
    async with engine.begin() as connection:
        await deliveries.record(connection, recorded)
    count_deliveries("webhook", (status for _, status, *_ in recorded))
    return len(claimed)


async def _posted(client: httpx.AsyncClient, settings: Settings, row: Any, endpoint: Any) -> Outcome:
    """One delivery's POST. An error nobody foresaw fails this delivery (retried, then dead), never the whole round:
    a round that raised would record no outcome at all and send its claimed deliveries again after the lease."""
    try:
        body = body_of(row.payload, row.idempotency_key, row.event_id)
        return await post(client, endpoint.url, endpoint.secret, row.idempotency_key, body,
                          settings.webhook_response_max_bytes, settings.webhook_timeout_seconds)  # fmt: skip
    except Exception as error:
        log.exception("notifications: webhook delivery %s (%s) failed unexpectedly", row.id, row.idempotency_key)
        return Outcome(False, False, None, f"unexpected {type(error).__name__}: {error}"[:500], 0.0)
