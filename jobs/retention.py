"""The retention job: every hour, rows past their retention are deleted in bounded batches (app/retention/)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.retention.service import prune
from app.services import Services

# A pass deleting a backlog (retention just shortened, a first pass over years of articles) may run long; it stops
# before the next hour's pass would start, and that one goes on where it stopped (every batch committed).
RETENTION_TIMEOUT_S = 3300


async def retention_job(ctx: dict[str, Any]) -> int:
    services: Services = ctx["services"]
    done = await prune(services.engine, services.settings, datetime.now(UTC))
    return sum(done.deleted.values())
