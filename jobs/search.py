"""Search jobs: the index kept in step with the articles (app/search/sync.py)."""

from __future__ import annotations

from typing import Any

from app.search.sync import sync_pending
from app.services import Services


async def sync_search_job(ctx: dict[str, Any]) -> int:
    """Every few seconds: articles added, changed or deleted since the last run go to the search index (Meilisearch;
    on PostgreSQL alone the events are only stamped, the database keeping the search vector itself)."""
    services: Services = ctx["services"]
    return await sync_pending(services.engine, services.search.meili, services.settings)
