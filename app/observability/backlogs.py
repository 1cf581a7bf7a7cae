"""How far the work that follows ingest trails it, read from the database for /metrics: undelivered outbox events per
topic (the search index's among them: its sync lag), articles still waiting for a story, and readers' alerts (events
not yet fanned out, dead deliveries)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles.repository import unclustered_count
from app.notifications import repository as fanouts
from app.observability.alerts import set_backlog
from app.observability.work import OUTBOX_OLDEST, OUTBOX_PENDING, SEARCH_LAG, UNCLUSTERED
from app.outbox import repository as outbox


async def sample_backlogs(engine: AsyncEngine, topics: Sequence[str], search_topic: str, *,
                          alert_topics: Sequence[str] = (), alert_lookback_seconds: float = 3600) -> None:  # fmt: skip
    """One reading of every backlog gauge (`search_topic`'s age is also the search sync's lag; `alert_topics` are the
    outbox topics fanned out to readers)."""
    now = datetime.now(UTC)
    async with engine.connect() as connection:
        for topic in topics:
            row = await outbox.backlog(connection, topic)
            oldest = max(0.0, (now - row.oldest).total_seconds()) if row.oldest else 0.0
            OUTBOX_PENDING.labels(topic).set(int(row.events))
            OUTBOX_OLDEST.labels(topic).set(oldest)
            if topic == search_topic:
                SEARCH_LAG.set(oldest)
        UNCLUSTERED.set(await unclustered_count(connection))
        if alert_topics:
            alerts = await fanouts.backlog(connection, alert_topics, lookback_seconds=alert_lookback_seconds)
            set_backlog(int(alerts.dead), (now - alerts.oldest).total_seconds() if alerts.oldest else 0.0)
