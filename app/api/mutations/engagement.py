"""engagementRecord: what a reader did with an article, feeding their interest vector (idempotent per session)."""

from __future__ import annotations

from datetime import UTC, datetime

import strawberry
from strawberry import relay

from app.api.auth import require_viewer
from app.api.context import Info
from app.api.errors import bad_argument
from app.api.relay import id_of
from app.api.types.account_error import AccountError, refused
from app.api.types.viewer import TopicWeight, weights_of
from app.feed import versions
from app.trending.store import record_reader_engagement
from app.users.errors import AccountRejected
from app.users.interests import record
from app.users.models import EngagementAction

EngagementActionEnum = strawberry.enum(EngagementAction, name="EngagementAction")
MAX_SESSION_ID = 64
MAX_DWELL_MS = 24 * 3600 * 1000


@strawberry.type
class EngagementPayload:
    recorded: bool = strawberry.field(description="False when this (article, session, action) was already recorded.")
    interests: list[TopicWeight]
    errors: list[AccountError]


async def engagement_record(
    info: Info,
    article_id: relay.GlobalID,
    action: EngagementActionEnum,  # type: ignore[valid-type]
    session_id: str,
    dwell_ms: int | None = None,
) -> EngagementPayload:
    user = await require_viewer(info)
    if not 1 <= len(session_id) <= MAX_SESSION_ID:
        raise bad_argument(f"`sessionId` has 1 to {MAX_SESSION_ID} characters")
    if dwell_ms is not None and not 0 <= dwell_ms <= MAX_DWELL_MS:
        raise bad_argument("`dwellMs` is between 0 and a day")
    services, article, done = info.context.services, id_of(article_id, "Article", "articleId"), EngagementAction(action)
    now = datetime.now(UTC)
    try:
        async with services.db.begin() as session:
            result = await record(session, user.id, article, done, session_id, dwell_ms, now)
    except AccountRejected as error:
        return EngagementPayload(recorded=False, interests=[], errors=refused(error))
    if result.recorded:  # after commit: the reader's cached feed pages are stale now
        await versions.bump(services.redis, user.id)
        if result.story_id is not None:  # its story gains engagement (once per reader, if the action weighs)
            await record_reader_engagement(services.redis, user.id, result.story_id, done, now)
    return EngagementPayload(recorded=result.recorded, interests=weights_of(result.weights), errors=[])
