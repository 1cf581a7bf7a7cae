"""The ShareLink type: its address, what it leads to, and (for its creator) its clicks by day and referrer."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

import strawberry
from strawberry import relay

from app.api.context import Info
from app.api.errors import bad_argument
from app.api.relay import after_time_key, encode_cursor, page_size
from app.api.types.article import ArticleNode
from app.api.types.story import StoryNode, load_story
from app.sharing.models import ShareLink, ShareTargetKind
from app.sharing.service import MAX_DAYS, ShareErrorCode, links_page

ShareErrorCodeEnum = strawberry.enum(ShareErrorCode, name="ShareErrorCode")
ShareTarget = Annotated[ArticleNode | StoryNode, strawberry.union("ShareTarget")]


@strawberry.type(description="Why a share link was not made.")
class ShareLinkError:
    code: ShareErrorCodeEnum  # type: ignore[valid-type]
    message: str


@strawberry.type(description="One UTC day of a share link.")
class ShareLinkDay:
    day: date
    clicks: int = strawberry.field(description="Readers who followed it (each counted once that day).")
    previews: int = strawberry.field(description="Link unfurlers, prefetches and HEAD requests (not readers).")


@strawberry.type(description="Readers who came from one site (`host` empty: none named, `(other)`: unreadable).")
class ShareLinkReferrer:
    host: str
    clicks: int


@strawberry.type(description="A share link's visits over some days (those of the last flush interval not yet in).")
class ShareLinkClicks:
    total: int
    previews: int
    by_day: list[ShareLinkDay] = strawberry.field(description="Every day of the span, oldest first (zeros too).")
    by_referrer: list[ShareLinkReferrer] = strawberry.field(description="Most clicks first.")


@strawberry.type(name="ShareLink", description="A short link to an article or story that counts its clicks.")
class ShareLinkNode:
    code: str
    url: str = strawberry.field(description="The link to hand out: it redirects to the article (302).")
    created_at: datetime
    row: strawberry.Private[ShareLink]

    @strawberry.field(description="What it leads to; null once that was deleted (the link then answers 410).")
    async def target(self, info: Info) -> ShareTarget | None:
        if self.row.target_kind is ShareTargetKind.STORY:
            return await load_story(info, self.row.story_id)
        if self.row.article_id is None:
            return None
        article = await info.context.loaders.article_by_id.load(self.row.article_id)
        return ArticleNode.from_model(article) if article else None

    @strawberry.field(description="Every click it has had (those of the last flush interval not yet in).")
    async def total_clicks(self, info: Info) -> int:
        return await info.context.loaders.share_clicks_by_link.load(self.row.id)

    @strawberry.field(
        description=f"Clicks of the last `days` days, today included (1 to {MAX_DAYS}: BAD_USER_INPUT beyond)."
    )
    async def clicks(self, info: Info, days: int = 30) -> ShareLinkClicks:
        if not 1 <= days <= MAX_DAYS:
            raise bad_argument(f"`days` must be between 1 and {MAX_DAYS}, got {days}")
        found = await info.context.loaders.share_link_days_by_link.load((self.row.id, days))
        return ShareLinkClicks(
            total=found.total, previews=found.previews,
            by_day=[ShareLinkDay(day=d.day, clicks=d.clicks, previews=d.previews) for d in found.by_day],
            by_referrer=[ShareLinkReferrer(host=host, clicks=clicks) for host, clicks in found.by_referrer],
        )  # fmt: skip

    @classmethod
    def from_model(cls, row: ShareLink, base_url: str) -> ShareLinkNode:
        return cls(code=row.code, url=f"{base_url.rstrip('/')}/s/{row.code}", created_at=row.created_at, row=row)


SHARE_LINK_CURSOR = "shareLink"


@strawberry.type(description="One of your share links in a page of them.")
class ShareLinkEdge:
    cursor: str
    node: ShareLinkNode


@strawberry.type(description="A page of your share links, newest first.")
class ShareLinkConnection:
    edges: list[ShareLinkEdge]
    page_info: relay.PageInfo


async def share_links_page(info: Info, creator_id: int, first: int | None, after: str | None) -> ShareLinkConnection:
    """One page of a reader's links: one query for the page; targets and clicks through the request's loaders."""
    size = page_size(first, info.context.services.settings)
    key = after_time_key(SHARE_LINK_CURSOR, after)
    async with info.context.services.db() as session:
        rows = await links_page(session, creator_id, key, size)
    base = base_url_of(info)
    edges = [ShareLinkEdge(cursor=encode_cursor(SHARE_LINK_CURSOR, [row.created_at.isoformat(), row.id]),
                           node=ShareLinkNode.from_model(row, base)) for row in rows[:size]]  # fmt: skip
    return ShareLinkConnection(edges=edges, page_info=relay.PageInfo(
        has_next_page=len(rows) > size, has_previous_page=after is not None,
        start_cursor=edges[0].cursor if edges else None, end_cursor=edges[-1].cursor if edges else None))  # fmt: skip


def base_url_of(info: Info) -> str:
    """Where /s/ is served: NEWSAGG_PUBLIC_URL, else the address this request came to."""
    configured = info.context.services.settings.public_url
    request = info.context.request
    return configured or (str(request.base_url) if request is not None else "http://localhost/")
