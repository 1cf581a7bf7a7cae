"""Share-link jobs: every NEWSAGG_SHARE_CLICK_FLUSH_SECONDS, the click counters in Redis written to PostgreSQL and
the cached destinations of deleted targets evicted."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.services import Services
from app.sharing.eviction import evict_gone
from app.sharing.flush import flush_clicks


async def flush_share_clicks_job(ctx: dict[str, Any]) -> int:
    services: Services = ctx["services"]
    now = datetime.now(UTC)
    flushed = await flush_clicks(services.db, services.redis, now)
    await evict_gone(services.db, services.redis, services.settings.share_link_cache_seconds, now)
    return flushed.clicks
