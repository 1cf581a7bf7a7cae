"""Root subscription fields, fed by Redis pub/sub through the process's Broadcaster."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.relay import id_of
from app.api.types.article import ArticleNode
from app.articles import repository as articles
from app.ingest.events import ARTICLES_ADDED


@strawberry.type
class Subscription:
    @strawberry.subscription(description="Articles as they are stored, optionally from one source only.")
    async def article_added(
        self, info: Info, source_id: relay.GlobalID | None = None
    ) -> AsyncGenerator[ArticleNode, None]:
        wanted = id_of(source_id, "Source", "sourceId") if source_id else None
        services = info.context.services
        async for event in services.broadcaster.subscribe(ARTICLES_ADDED):
            if wanted is not None and event.get("source_id") != wanted:
                continue
            async with services.db() as session:  # one query per event; a subscription's loaders would only grow
                rows = await articles.articles_by_ids(session, event["article_ids"])
            for row in sorted(rows, key=lambda r: r.id):
                yield ArticleNode.from_model(row)
