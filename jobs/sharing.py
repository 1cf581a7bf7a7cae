"""Share-link jobs: every NEWSAGG_SHARE_CLICK_FLUSH_SECONDS, the click counters in Redis written to PostgreSQL and
the cached destinations that changed (a target deleted or moved, a link deleted) evicted."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.services import Services
from app.sharing.eviction import evict_changed
from app.sharing.flush import flush_clicks


async def flush_share_clicks_job(ctx: dict[str, Any]) -> int:
    services: Services = ctx["services"]
    try:
        flushed = await flush_clicks(services.db, services.redis, datetime.now(UTC))
    finally:  # a batch that cannot be written does not hold back eviction
        await evict_changed(services.db, services.redis)
    return flushed.clicks
