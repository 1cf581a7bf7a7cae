"""shareLinkCreate and shareLink: a signed-in reader's short link to an article or story, and its clicks."""

from __future__ import annotations

from datetime import UTC, datetime

import strawberry
from strawberry import relay

from app.api.auth import require_viewer
from app.api.context import Info
from app.api.errors import bad_argument
from app.api.rate_limit import answer_refusal, rate_limited
from app.api.relay import id_of
from app.api.types.share_link import ShareLinkError, ShareLinkNode, base_url_of
from app.ratelimit.policies import Policy
from app.sharing.models import ShareTargetKind
from app.sharing.service import ShareRejected, own_link, share
from app.trending.store import record_reader_engagement
from app.users.models import EngagementAction, User

HOUR_S = 3600.0


@strawberry.input(description="What to share: exactly one of an article and a story.")
class ShareLinkCreateInput:
    article_id: relay.GlobalID | None = None
    story_id: relay.GlobalID | None = None


@strawberry.type
class ShareLinkCreatePayload:
    share_link: ShareLinkNode | None
    created: bool = strawberry.field(description="False: you had shared it already; this is the same link.")
    errors: list[ShareLinkError]


async def share_link_create(info: Info, input: ShareLinkCreateInput) -> ShareLinkCreatePayload:
    user = await require_viewer(info)
    if (input.article_id is None) == (input.story_id is None):
        raise bad_argument("give exactly one of `articleId` and `storyId`")
    if input.article_id is not None:
        kind, target = ShareTargetKind.ARTICLE, id_of(input.article_id, "Article", "articleId")
    else:
        assert input.story_id is not None
        kind, target = ShareTargetKind.STORY, id_of(input.story_id, "Story", "storyId")
    services = info.context.services
    try:
        async with services.db.begin() as session:
            shared = await share(session, user.id, kind, target, lambda: _admit(info, user), services.share_key)
    except ShareRejected as error:
        return ShareLinkCreatePayload(share_link=None, created=False,
                                      errors=[ShareLinkError(code=error.code, message=str(error))])  # fmt: skip
    if shared.created and shared.story_id is not None:  # after commit: its story gains a share (once per reader)
        await record_reader_engagement(services.redis, user.id, shared.story_id, EngagementAction.SHARE,
                                       datetime.now(UTC))  # fmt: skip
    return ShareLinkCreatePayload(share_link=ShareLinkNode.from_model(shared.link, base_url_of(info)),
                                  created=shared.created, errors=[])  # fmt: skip


async def _admit(info: Info, user: User) -> None:
    """A new link takes one from the reader's hourly allowance (NEWSAGG_SHARE_LINKS_PER_HOUR)."""
    services = info.context.services
    policy = Policy("shareLinkCreate", services.settings.share_links_per_hour, HOUR_S)
    verdict = await services.rate_limits.charge(policy, f"user:{user.id}", 1)
    if verdict is not None and not verdict.allowed:
        answer_refusal(info.context, verdict)
        raise rate_limited(verdict)


async def share_link(info: Info, code: str) -> ShareLinkNode | None:
    """One of your share links by its code (null for a code that is not one of yours)."""
    user = await require_viewer(info)
    async with info.context.services.db() as session:
        link = await own_link(session, user.id, code)
    return ShareLinkNode.from_model(link, base_url_of(info)) if link else None
