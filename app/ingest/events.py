"""Events ingest publishes once new articles are committed."""

from __future__ import annotations

from redis.asyncio import Redis

from app.realtime.broadcast import publish

ARTICLES_ADDED = "articles_added"


async def publish_articles_added(redis: Redis, source_id: int, article_ids: list[int]) -> None:
    if article_ids:
        await publish(redis, ARTICLES_ADDED, {"source_id": source_id, "article_ids": article_ids})
