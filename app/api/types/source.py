"""The Source node and its crawl state."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.relay import load_nodes
from app.api.types.enums import CircuitEnum, CrawlClaimEnum, SourceKindEnum, SourceStatusEnum
from app.places.outlets import OutletKind
from app.sources.models import CrawlSchedule, Source

OutletKindEnum = strawberry.enum(OutletKind, name="OutletKind", description="What kind of outlet a source is.")


@strawberry.type(description="When a source is fetched next and how its recent fetches went.")
class CrawlState:
    next_crawl_at: datetime
    claim: CrawlClaimEnum  # type: ignore[valid-type]
    last_fetched_at: datetime | None
    consecutive_failures: int
    circuit: CircuitEnum  # type: ignore[valid-type]
    articles_per_hour: float = strawberry.field(description="EMA of the source's publishing rate.")
    last_error: str | None

    @classmethod
    def from_model(cls, row: CrawlSchedule) -> CrawlState:
        return cls(
            next_crawl_at=row.next_crawl_at,
            claim=row.status,
            last_fetched_at=row.last_fetched_at,
            consecutive_failures=row.consecutive_failures,
            circuit=row.circuit,
            articles_per_hour=row.articles_per_hour,
            last_error=row.last_error,
        )


@strawberry.type(name="Source", description="A feed newsagg crawls.")
class SourceNode(relay.Node):
    id: relay.NodeID[int]
    feed_url: str
    site_url: str | None = strawberry.field(description="The feed's own link, unless an administrator set it.")
    name: str = strawberry.field(description="The feed's own title once fetched, unless an administrator named it.")
    kind: SourceKindEnum  # type: ignore[valid-type]
    category: str | None
    language: str | None
    authority: float = strawberry.field(description="Credibility from 0 to 1; ranks the source's stories.")
    status: SourceStatusEnum  # type: ignore[valid-type]
    created_at: datetime
    article_text: bool = strawberry.field(
        description="Whether the pages of its articles are fetched for their full text when the feed carries only a "
        "summary (a feed's own full text is used either way)."
    )

    country: str | None = strawberry.field(
        description="Where the outlet is (ISO 3166-1 alpha-2): from OPML or an administrator, else inferred from its "
        "domain (.co.uk: GB) or a list of well-known outlets, its language as weak evidence."
    )
    outlet_kind: OutletKindEnum = strawberry.field(  # type: ignore[valid-type]
        description="Wire, national, local or international; unknown unless set or a well-known outlet."
    )
    outlet_inferred: bool = strawberry.field(
        description="Whether `country` and `outletKind` were inferred (an administrator's or a list's are kept)."
    )

    @strawberry.field(description="Scheduling and health of this source's crawl.")
    async def crawl(self, info: Info) -> CrawlState | None:
        row = await info.context.loaders.crawl_schedule_by_source_id.load(self.id)
        return CrawlState.from_model(row) if row else None

    @classmethod
    def from_model(cls, row: Source) -> SourceNode:
        return cls(
            id=row.id,
            feed_url=row.feed_url,
            site_url=row.site_url,
            name=row.name,
            kind=row.kind,
            category=row.category,
            language=row.language,
            authority=row.authority,
            status=row.status,
            created_at=row.created_at,
            article_text=row.article_text,
            country=row.country,
            outlet_kind=OutletKind(row.outlet_kind),
            outlet_inferred=row.outlet_inferred,
        )

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> Iterable[SourceNode | None]:
        return await load_nodes(info.context.loaders.source_by_id, node_ids, cls.from_model)
