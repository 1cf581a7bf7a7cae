"""The ShareLink type: its address, what it leads to, and (for its creator) its clicks by day and referrer."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime
from typing import Annotated

import strawberry

from app.api.context import Info
from app.api.types.article import ArticleNode
from app.api.types.story import StoryNode, load_story
from app.sharing.models import ShareLink, ShareTargetKind
from app.sharing.service import MAX_DAYS, ShareErrorCode, daily_clicks

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

    @strawberry.field(description=f"Clicks of the last `days` days, today included (1 to {MAX_DAYS}).")
    async def clicks(self, info: Info, days: int = 30) -> ShareLinkClicks:
        today = datetime.now(UTC).date()
        async with info.context.services.db() as session:
            rows = await daily_clicks(session, self.row.id, days, today)
        per_day: dict[date, list[int]] = defaultdict(lambda: [0, 0])
        per_host: dict[str, int] = defaultdict(int)
        for row in rows:
            per_day[row.day][0] += row.clicks
            per_day[row.day][1] += row.previews
            if row.clicks:
                per_host[row.referrer_host] += row.clicks
        span = max(1, min(days, MAX_DAYS))
        calendar = [date.fromordinal(today.toordinal() - back) for back in reversed(range(span))]
        return ShareLinkClicks(
            total=sum(c for c, _ in per_day.values()), previews=sum(p for _, p in per_day.values()),
            by_day=[ShareLinkDay(day=d, clicks=per_day[d][0], previews=per_day[d][1]) for d in calendar],
            by_referrer=[ShareLinkReferrer(host=h, clicks=c)
                         for h, c in sorted(per_host.items(), key=lambda item: (-item[1], item[0]))],
        )  # fmt: skip

    @classmethod
    def from_model(cls, row: ShareLink, base_url: str) -> ShareLinkNode:
        return cls(code=row.code, url=f"{base_url.rstrip('/')}/s/{row.code}", created_at=row.created_at, row=row)


def base_url_of(info: Info) -> str:
    """Where /s/ is served: NEWSAGG_PUBLIC_URL, else the address this request came to."""
    configured = info.context.services.settings.public_url
    request = info.context.request
    return configured or (str(request.base_url) if request is not None else "http://localhost/")
