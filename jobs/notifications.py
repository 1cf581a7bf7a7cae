"""Notification jobs: fan-out of outbox events to readers, webhook delivery, email digests (app/notifications/)."""

from __future__ import annotations

from typing import Any

from app.notifications.delivery import deliver_webhooks
from app.notifications.digest import send_digests
from app.notifications.fanout import fan_out
from app.notifications.repository import prune_hours
from app.services import Services


async def fan_out_job(ctx: dict[str, Any]) -> int:
    """Every 2 s: new breaking stories and followed stories' updates become notifications and deliveries."""
    services: Services = ctx["services"]
    return (await fan_out(services.engine, services.settings, services.redis)).notified


async def deliver_webhooks_job(ctx: dict[str, Any]) -> int:
    """Every 2 s: due webhook deliveries are POSTed (first tries and retries)."""
    services: Services = ctx["services"]
    return (await deliver_webhooks(services.engine, ctx["webhooks"], services.settings)).delivered


async def send_digests_job(ctx: dict[str, Any]) -> int:
    """Every minute: readers whose digest is due get one email (when SMTP is configured)."""
    services: Services = ctx["services"]
    return await send_digests(services.engine, services.settings)


async def expire_alert_hours_job(ctx: dict[str, Any]) -> int:
    """Every 5 minutes: readers' hourly alert counts older than the previous hour are deleted (the cap reads only the
    current hour's); how many went. Its own schedule, not part of the 2-second fan-out."""
    services: Services = ctx["services"]
    async with services.engine.begin() as connection:
        return await prune_hours(connection)
