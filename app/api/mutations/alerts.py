"""alertRulesSet, storyFollow, storyUnfollow, notificationsMarkRead, webhookEndpointSet (a reader's own) and
deliveriesReplay (administrators)."""

from __future__ import annotations

import strawberry
from strawberry import relay

from app.api.auth import require_viewer
from app.api.context import Info
from app.api.errors import bad_argument
from app.api.filters import topic_values
from app.api.notifications import require_admin
from app.api.relay import id_of
from app.api.types.notification import (
    AlertError,
    AlertRulesInfo,
    AlertRulesInput,
    WebhookEndpointInfo,
    alert_refused,
)
from app.api.types.story import StoryNode, load_story
from app.notifications import delivery_repository as deliveries
from app.notifications import inbox, rules
from app.notifications.errors import AlertRejected
from app.places.countries import InvalidRegion

MAX_IDS = 100


def _row_id(value: str, argument: str) -> int:
    """A plain database id (API keys, deliveries), or BAD_USER_INPUT."""
    try:
        row_id = int(value)
    except ValueError:
        row_id = 0
    if not 0 < row_id < 2**63:
        raise bad_argument(f"{argument}: not an id")
    return row_id


@strawberry.type
class AlertRulesPayload:
    rules: AlertRulesInfo | None
    errors: list[AlertError]


async def alert_rules_set(info: Info, input: AlertRulesInput) -> AlertRulesPayload:
    user = await require_viewer(info)
    choice = rules.RuleChoice(
        breaking=input.breaking, story_updates=input.story_updates, topics=topic_values(input.topics),
        source_ids=list(input.source_ids), entities=list(input.entities), languages=list(input.languages),
        region=input.region, time_zone=input.time_zone, quiet_start=input.quiet_start,
        quiet_end=input.quiet_end, cap_per_hour=input.cap_per_hour, digest=input.digest.value,
    )  # fmt: skip
    try:
        async with info.context.services.db.begin() as session:
            stored = await rules.set_rules(session, user.id, choice)
    except (AlertRejected, InvalidRegion) as error:
        return AlertRulesPayload(rules=None, errors=alert_refused(error))
    return AlertRulesPayload(rules=AlertRulesInfo.from_model(stored), errors=[])


@strawberry.type
class StoryFollowPayload:
    story: StoryNode | None
    errors: list[AlertError]


async def _follow(info: Info, id: relay.GlobalID, follow: bool) -> StoryFollowPayload:
    user = await require_viewer(info)
    story_id = id_of(id, "Story", "id")
    try:
        async with info.context.services.db.begin() as session:
            await rules.follow_story(session, user.id, story_id, follow=follow)
    except AlertRejected as error:
        return StoryFollowPayload(story=None, errors=alert_refused(error))
    return StoryFollowPayload(story=await load_story(info, story_id), errors=[])


async def story_follow(info: Info, id: relay.GlobalID) -> StoryFollowPayload:
    return await _follow(info, id, True)


async def story_unfollow(info: Info, id: relay.GlobalID) -> StoryFollowPayload:
    return await _follow(info, id, False)


@strawberry.type
class NotificationsMarkReadPayload:
    marked: int = strawberry.field(description="Notifications that were unread and are read now.")
    unread: int


async def notifications_mark_read(info: Info, ids: list[relay.GlobalID] | None = None) -> NotificationsMarkReadPayload:
    """`ids` of your notifications; none given: all of them."""
    user = await require_viewer(info)
    if ids is not None and len(ids) > MAX_IDS:
        raise bad_argument(f"at most {MAX_IDS} ids at once (or none: all)")
    wanted = [id_of(i, "Notification", "ids") for i in ids] if ids is not None else None
    async with info.context.services.db.begin() as session:
        marked = await inbox.mark_read(session, user.id, wanted)
        unread = await inbox.unread_count(session, user.id)
    return NotificationsMarkReadPayload(marked=marked, unread=unread)


@strawberry.type
class WebhookEndpointPayload:
    endpoint: WebhookEndpointInfo | None
    secret: str | None = strawberry.field(description="The signing secret, shown once: when the endpoint is created.")
    errors: list[AlertError]


async def webhook_endpoint_set(info: Info, api_key_id: strawberry.ID, url: str,
                               active: bool = True) -> WebhookEndpointPayload:  # fmt: skip
    user = await require_viewer(info)
    settings = info.context.services.settings
    key_id = _row_id(api_key_id, "apiKeyId")
    try:
        async with info.context.services.db.begin() as session:
            endpoint, secret = await inbox.set_endpoint(session, user.id, key_id, url, active=active,
                                                        allow_loopback=settings.webhooks_allow_loopback)  # fmt: skip
    except AlertRejected as error:
        return WebhookEndpointPayload(endpoint=None, secret=None, errors=alert_refused(error))
    return WebhookEndpointPayload(endpoint=WebhookEndpointInfo.from_model(endpoint), secret=secret, errors=[])


@strawberry.type
class DeliveriesReplayPayload:
    replayed: list[strawberry.ID] = strawberry.field(description="The dead deliveries now pending again.")


async def deliveries_replay(info: Info, ids: list[strawberry.ID]) -> DeliveriesReplayPayload:
    await require_admin(info)
    if len(ids) > MAX_IDS * 10:
        raise bad_argument(f"at most {MAX_IDS * 10} ids at once")
    wanted = [_row_id(i, "ids") for i in ids]
    async with info.context.services.db.begin() as session:
        replayed = await deliveries.replay(session, wanted)
    return DeliveriesReplayPayload(replayed=[strawberry.ID(str(i)) for i in replayed])
