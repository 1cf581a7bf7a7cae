"""Backlog job: how far the outbox relay, clustering, the search index and readers' alerts trail ingest, read for
/metrics."""

from __future__ import annotations

from typing import Any

from app.notifications.fanout import TOPICS as ALERT_TOPICS
from app.observability.backlogs import sample_backlogs
from app.search.sync import SEARCH_TOPIC
from app.services import Services
from jobs.outbox import PUSHED_TOPICS

SAMPLE_SECONDS = 15  # as often as Prometheus usually scrapes


async def sample_backlogs_job(ctx: dict[str, Any]) -> None:
    services: Services = ctx["services"]
    await sample_backlogs(services.engine, (*PUSHED_TOPICS, SEARCH_TOPIC), SEARCH_TOPIC, alert_topics=ALERT_TOPICS,
                          alert_lookback_seconds=services.settings.notify_lookback_seconds)  # fmt: skip
