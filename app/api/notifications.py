"""Query and subscription fields of readers' alerts: `notifications`, `alertRules`, `webhookEndpoints`,
`deadDeliveries` (administrators) and `notificationAdded`."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import strawberry
from strawberry import relay

from app.api.auth import require_viewer
from app.api.context import Info
from app.api.errors import BadRequest, bad_argument
from app.api.live_auth import while_signed_in
from app.api.relay import after_id_key, build_connection, id_of, page_size
from app.api.types.notification import AlertRulesInfo, DeliveryInfo, NotificationNode, WebhookEndpointInfo
from app.notifications import inbox, live
from app.notifications.dead_deliveries import dead_page
from app.notifications.errors import AlertRejected
from app.notifications.rules import rules_of

NOTIFICATION_CURSOR = "notification"


async def notifications(info: Info, first: int | None = None, after: str | None = None,
                        unread_only: bool = False) -> relay.Connection[NotificationNode]:  # fmt: skip
    user = await require_viewer(info)
    size = page_size(first, info.context.services.settings)
    before = after_id_key(NOTIFICATION_CURSOR, after)
    async with info.context.services.db() as session:
        rows = await inbox.page(session, user.id, before=before, limit=size + 1, unread_only=unread_only)
    return build_connection(rows, size=size, had_cursor=after is not None, kind=NOTIFICATION_CURSOR,
                            key=lambda n: [n.id], node=NotificationNode.from_model)  # fmt: skip


async def unread_notifications(info: Info) -> int:
    user = await require_viewer(info)
    async with info.context.services.db() as session:
        return await inbox.unread_count(session, user.id)


async def alert_rules(info: Info) -> AlertRulesInfo:
    user = await require_viewer(info)
    async with info.context.services.db() as session:
        return AlertRulesInfo.from_model(await rules_of(session, user.id))


async def webhook_endpoints(info: Info) -> list[WebhookEndpointInfo]:
    user = await require_viewer(info)
    async with info.context.services.db() as session:
        return [WebhookEndpointInfo.from_model(e) for e in await inbox.endpoints_of(session, user.id)]


async def require_admin(info: Info) -> None:
    user = await require_viewer(info)
    if not user.is_admin:
        raise BadRequest("FORBIDDEN", "deliveries are for administrators")


async def dead_deliveries(info: Info, first: int | None = None,
                          after_id: strawberry.ID | None = None) -> list[DeliveryInfo]:  # fmt: skip
    await require_admin(info)
    size = page_size(first, info.context.services.settings)
    try:
        async with info.context.services.db() as session:
            page = await dead_page(session, None if after_id is None else str(after_id), size)
    except AlertRejected as error:
        raise bad_argument(str(error)) from error
    return [DeliveryInfo.from_dead(dead) for dead in page]


async def new_notifications(info: Info, after: relay.GlobalID | None) -> AsyncGenerator[NotificationNode, None]:
    """The signed-in reader's new in-app notifications, each once (app/notifications/live.py), until they sign out:
    their credential is checked again before each notification and at each keep-alive interval."""
    user = await require_viewer(info)
    resumed = id_of(after, "Notification", "after") if after is not None else None
    services = info.context.services
    rows = live.new_notifications(services.notifications, user.id, after=resumed)
    async for row in while_signed_in(info.context, user, rows, services.settings.ws_keepalive_seconds):
        yield NotificationNode.from_model(row)
