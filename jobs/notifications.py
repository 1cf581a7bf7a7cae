"""Notification jobs: fan-out of outbox events to readers, webhook delivery, email digests (app/notifications/)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from sqlalchemy.exc import DBAPIError

from app.notifications.delivery import DeliveryReport, deliver_webhooks
from app.notifications.digest import send_digests
from app.notifications.digest_runs import DigestRuns
from app.notifications.fanout import FanoutReport, fan_out
from app.notifications.repository import prune_hours
from app.resilience.metrics import DATABASE_RETRIES
from app.services import Services
from jobs.loop import REDIS_FAILURES, lost_server

log = logging.getLogger(__name__)


async def fan_out_job(ctx: dict[str, Any]) -> int:
    """Every 2 s: new breaking stories and followed stories' updates become notifications and deliveries. Without
    PostgreSQL the run says so and ends, counted; the next run goes on from the last batch committed."""
    services: Services = ctx["services"]
    run = fan_out(services.engine, services.settings, services.redis)
    return await _unless_postgresql_is_away("fan_out", _notified(run), "the next run goes on from the last batch")


async def _notified(run: Awaitable[FanoutReport]) -> int:
    return (await run).notified


async def deliver_webhooks_job(ctx: dict[str, Any]) -> int:
    """Every 2 s: due webhook deliveries are POSTed (first tries and retries). Without PostgreSQL the run says so and
    ends, counted; the next run tries again, and what this one had POSTed is POSTed again once its lease ends (at
    least once: a receiver may see a `Newsagg-Delivery` key twice, never a delivery lost or marked delivered unsent)."""
    services: Services = ctx["services"]
    run = deliver_webhooks(services.engine, ctx["webhooks"], services.settings)
    return await _unless_postgresql_is_away("deliver_webhooks", _delivered(run),
                                            "deliveries taken are sent again when their lease ends")  # fmt: skip


async def _delivered(run: Awaitable[DeliveryReport]) -> int:
    return (await run).delivered


async def send_digests_job(ctx: dict[str, Any]) -> int:
    """Every minute: readers whose digest is due get one email (when SMTP is configured). One run per worker at a time
    and `digest_concurrent_runs` across workers (app/notifications/digest_runs.py): a run past them ends at once.
    Without PostgreSQL the run says so and ends, counted; a digest it sent but could not record is sent again, the
    same email, when its lease ends."""
    services: Services = ctx["services"]
    if not services.settings.smtp_host:
        return 0  # entries wait; no lease taken for a run that would send nothing
    if "digest_runs" not in ctx:  # one per worker process (its ctx)
        ctx["digest_runs"] = DigestRuns(services.redis, services.settings)
    runs: DigestRuns = ctx["digest_runs"]
    async with runs.turn() as going:
        if not going:
            return 0
        run = send_digests(services.engine, services.settings)
        return await _unless_postgresql_is_away("send_digests", run,
                                                "digests taken are sent again when their lease ends")  # fmt: skip


async def _unless_postgresql_is_away(job: str, run: Awaitable[int], then: str) -> int:
    """`run`'s result; 0, logged and counted, when it lost PostgreSQL (any other failure is raised)."""
    try:
        return await run
    except (DBAPIError, *REDIS_FAILURES) as error:
        if lost_server(error) != "PostgreSQL":
            raise
        DATABASE_RETRIES.inc()
        log.warning("%s: PostgreSQL unreachable (%s: %s); %s", job, type(error).__name__,
                    str(error).split("\n", 1)[0], then)  # fmt: skip
        return 0


async def expire_alert_hours_job(ctx: dict[str, Any]) -> int:
    """Every 5 minutes: readers' hourly alert counts older than the previous hour are deleted (the cap reads only the
    current hour's); how many went. Its own schedule, not part of the 2-second fan-out."""
    services: Services = ctx["services"]
    async with services.engine.begin() as connection:
        return await prune_hours(connection)
