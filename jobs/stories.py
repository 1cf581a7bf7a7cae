"""Story jobs: new articles understood (fingerprinted, labelled) and clustered into stories; stories merged."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.articles.understanding import understand_articles
from app.services import Services
from app.stories.service import cluster_articles, merge_stories
from app.trending.store import record_arrivals
from jobs.outbox import publish_outbox

CLUSTER_PENDING = 2000  # a clustering job also takes up to this many other understood articles still waiting


async def understand_articles_job(ctx: dict[str, Any], article_ids: list[int]) -> int:
    """New articles, once stored: fingerprinted and labelled (copies marked), then clustered into stories."""
    services: Services = ctx["services"]
    await understand_articles(services.engine, article_ids, now=datetime.now(UTC))
    placed = await cluster_articles(services.engine, article_ids, ctx["clustering"], pending=CLUSTER_PENDING)
    await record_arrivals(services.redis, placed, datetime.now(UTC))  # trending (logs, never raises, if Redis fails)
    await publish_outbox(services)  # a story that just broke, or grew, is announced at once
    return len(placed)


async def merge_stories_job(ctx: dict[str, Any]) -> int:
    """Every NEWSAGG_STORY_MERGE_SECONDS: stories that later articles show to be one are merged (old ids resolve);
    breaking stories cool down."""
    services: Services = ctx["services"]
    return await merge_stories(services.engine, datetime.now(UTC), ctx["clustering"])
