"""The signed-in user, as they see themselves (`viewer`): only ever their own account."""

from __future__ import annotations

from datetime import UTC, datetime

import strawberry
from sqlalchemy import select

from app.api.context import Info
from app.api.filters import topics_of
from app.api.types.enums import TopicEnum
from app.api.types.share_link import ShareLinkConnection, share_links_page
from app.api.types.source import SourceNode
from app.topics.keywords import TOPICS, Topic
from app.users import preferences
from app.users.interests import interests
from app.users.models import ApiKey, SourceFollow, SourceMute, User


@strawberry.type(name="ApiKey", description="A key an app authenticates with (`Authorization: Bearer nak_...`).")
class ApiKeyInfo:
    id: strawberry.ID
    name: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def from_model(cls, row: ApiKey) -> ApiKeyInfo:
        return cls(id=strawberry.ID(str(row.id)), name=row.name, created_at=row.created_at,
                   last_used_at=row.last_used_at, revoked_at=row.revoked_at)  # fmt: skip


@strawberry.type(description="How much a reader cares about a topic (negative: they dismiss it).")
class TopicWeight:
    topic: TopicEnum  # type: ignore[valid-type]
    weight: float


def weights_of(weights: dict[str, float]) -> list[TopicWeight]:
    return [TopicWeight(topic=Topic(t), weight=round(w, 6))
            for t, w in sorted(weights.items(), key=lambda pair: -pair[1]) if t in TOPICS]  # fmt: skip


@strawberry.type(name="Viewer", description="The signed-in account.")
class Viewer:
    email: str
    is_admin: bool
    created_at: datetime
    preferred_languages: list[str]
    home_region: str | None = strawberry.field(description="ISO 3166-1 alpha-2: local stories rank higher.")
    user_id: strawberry.Private[int]

    @strawberry.field(description="This account's API keys, newest first (the keys themselves are never shown again).")
    async def api_keys(self, info: Info) -> list[ApiKeyInfo]:
        async with info.context.services.db() as session:
            rows = await session.scalars(select(ApiKey).where(ApiKey.user_id == self.user_id)
                                         .order_by(ApiKey.id.desc()))  # fmt: skip
            return [ApiKeyInfo.from_model(row) for row in rows]

    @strawberry.field(description="Interests learned from engagement (decayed to now; follows count at least 1).")
    async def interests(self, info: Info) -> list[TopicWeight]:
        async with info.context.services.db() as session:
            return weights_of(await interests(session, self.user_id, datetime.now(UTC)))

    @strawberry.field(description="Topics this account follows.")
    async def followed_topics(self, info: Info) -> list[TopicEnum]:  # type: ignore[valid-type]
        async with info.context.services.db() as session:
            return topics_of(await preferences.followed_topics(session, self.user_id))

    @strawberry.field(description="Sources this account follows.")
    async def followed_sources(self, info: Info) -> list[SourceNode]:
        async with info.context.services.db() as session:
            return [SourceNode.from_model(s) for s in await preferences.sources_of(session, self.user_id, SourceFollow)]

    @strawberry.field(description="Sources this account never wants to see.")
    async def muted_sources(self, info: Info) -> list[SourceNode]:
        async with info.context.services.db() as session:
            return [SourceNode.from_model(s) for s in await preferences.sources_of(session, self.user_id, SourceMute)]

    @strawberry.field(
        description="Your share links, newest first, each with what it leads to and its clicks "
        "(`first` capped as every list is; BAD_CURSOR for an `after` not from this list)."
    )
    async def share_links(self, info: Info, first: int | None = None, after: str | None = None) -> ShareLinkConnection:
        return await share_links_page(info, self.user_id, first, after)

    @classmethod
    def from_model(cls, row: User) -> Viewer:
        return cls(email=row.email, is_admin=row.is_admin, created_at=row.created_at,
                   preferred_languages=list(row.preferred_languages), home_region=row.home_region,
                   user_id=row.id)  # fmt: skip
