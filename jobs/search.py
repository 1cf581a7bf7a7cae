"""Search jobs: the index kept in step with the articles (app/search/sync.py)."""

from __future__ import annotations

from typing import Any

from app.search.sync import sync_all
from app.services import Services


async def sync_search_job(ctx: dict[str, Any]) -> int:
    """Every few seconds: articles added, changed or deleted since the last run go to the search index (Meilisearch;
    on PostgreSQL alone the events are only stamped, the database keeping the search vector itself)."""
    services: Services = ctx["services"]
    settings = services.settings
    return await sync_all(services.engine, services.search.meili, batch=settings.search_sync_batch,
                          retry_cap_seconds=settings.search_retry_max_seconds)  # fmt: skip
