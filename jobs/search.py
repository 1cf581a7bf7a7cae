"""Search jobs: the index kept in step with the articles (app/search/sync.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.search.bodies import index_stored_bodies
from app.search.recent import keep_recent_index
from app.search.sync import sync_pending
from app.services import Services


async def sync_search_job(ctx: dict[str, Any]) -> int:
    """Every few seconds: articles added, changed or deleted since the last run go to the search index (Meilisearch;
    on PostgreSQL alone the events are only stamped, the database keeping the search vector itself)."""
    services: Services = ctx["services"]
    return await sync_pending(services.engine, services.search.meili, services.settings)


async def recent_index_job(ctx: dict[str, Any]) -> str | None:
    """Hourly and at the worker's start: the text-search index over the last days' articles is today's
    (app/search/recent.py); the name built, if one was."""
    services: Services = ctx["services"]
    return await keep_recent_index(services.engine, datetime.now(UTC))


async def stored_bodies_job(ctx: dict[str, Any]) -> int | None:
    """At the worker's start and daily: texts stored before search read bodies get their body vectors, in small
    transactions (app/search/bodies.py); how many did."""
    services: Services = ctx["services"]
    return await index_stored_bodies(services.engine)
