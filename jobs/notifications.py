"""Notification jobs: fan-out of outbox events to readers, webhook delivery, email digests (app/notifications/)."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.exc import DBAPIError

from app.notifications.delivery import deliver_webhooks
from app.notifications.digest import send_digests
from app.notifications.fanout import fan_out
from app.resilience.metrics import DATABASE_RETRIES
from app.services import Services
from jobs.loop import REDIS_FAILURES, lost_server

log = logging.getLogger(__name__)


async def fan_out_job(ctx: dict[str, Any]) -> int:
    """Every 2 s: new breaking stories and followed stories' updates become notifications and deliveries."""
    services: Services = ctx["services"]
    return (await fan_out(services.engine, services.settings, services.redis)).notified


async def deliver_webhooks_job(ctx: dict[str, Any]) -> int:
    """Every 2 s: due webhook deliveries are POSTed (first tries and retries). Without PostgreSQL the run says so and
    ends, counted; the next run tries again, and what this one had POSTed is POSTed again once its lease ends (at
    least once: a receiver may see a `Newsagg-Delivery` key twice, never a delivery lost or marked delivered unsent)."""
    services: Services = ctx["services"]
    try:
        return (await deliver_webhooks(services.engine, ctx["webhooks"], services.settings)).delivered
    except (DBAPIError, *REDIS_FAILURES) as error:
        if lost_server(error) != "PostgreSQL":
            raise
        DATABASE_RETRIES.inc()
        log.warning("deliver_webhooks: PostgreSQL unreachable (%s: %s); deliveries taken are sent again when their "
                    "lease ends", type(error).__name__, str(error).split("\n", 1)[0])  # fmt: skip
        return 0


async def send_digests_job(ctx: dict[str, Any]) -> int:
    """Every minute: readers whose digest is due get one email (when SMTP is configured)."""
    services: Services = ctx["services"]
    return await send_digests(services.engine, services.settings)
