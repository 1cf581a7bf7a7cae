"""WebSub jobs: subscribing to a source's hub, and asking hubs again before leases run out."""

from __future__ import annotations

import time
from typing import Any

from app.queue_names import WEBSUB_SUBSCRIBE
from app.services import Services
from app.websub.protocol import Discovery
from app.websub.service import renewals_due, subscribe


async def websub_subscribe_job(ctx: dict[str, Any], source_id: int, hub: str, topic: str) -> str:
    services: Services = ctx["services"]
    return await subscribe(services.engine, ctx["http"], services.settings, source_id, Discovery(hub, topic))


async def websub_renew(ctx: dict[str, Any]) -> int:
    """Hourly: ask hubs again before leases run out."""
    services: Services = ctx["services"]
    if not services.settings.public_url:
        return 0
    async with services.engine.connect() as connection:
        due = await renewals_due(connection, services.settings)
    for source_id, found in due:
        await enqueue_subscribe(ctx, source_id, found.hub, found.topic)
    return len(due)


async def enqueue_subscribe(ctx: dict[str, Any], source_id: int, hub: str, topic: str) -> None:
    """One subscribe job for `source_id` at a time: its job id is the source's and the hour's (a job stranded by a
    dead worker keeps its id taken in arq for an hour; the renewals of the next hour must not find it blocked)."""
    services: Services = ctx["services"]
    job_id = f"websub:{source_id}:{int(time.time() // 3600)}"
    await ctx["redis"].enqueue_job(
        WEBSUB_SUBSCRIBE, source_id, hub, topic, _job_id=job_id, _queue_name=services.settings.queue_name
    )
