"""Root subscription fields, fed by Redis pub/sub through the process's Broadcaster."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.relay import id_of
from app.api.types.article import ArticleNode
from app.ingest.events import ARTICLES_ADDED


@strawberry.type
class Subscription:
    @strawberry.subscription(description="Articles as they are stored, optionally from one source only.")
    async def article_added(
        self, info: Info, source_id: relay.GlobalID | None = None
    ) -> AsyncGenerator[ArticleNode, None]:
        wanted = id_of(source_id, "Source", "sourceId") if source_id else None
        loader = info.context.loaders.article_by_id
        async for event in info.context.services.broadcaster.subscribe(ARTICLES_ADDED):
            if wanted is not None and event.get("source_id") != wanted:
                continue
            loader.clear_many(event["article_ids"])
            for row in await loader.load_many(event["article_ids"]):
                if row is not None:
                    yield ArticleNode.from_model(row)
