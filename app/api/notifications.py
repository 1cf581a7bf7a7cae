"""Query and subscription fields of readers' alerts: `notifications`, `alertRules`, `webhookEndpoints`,
`deadDeliveries` (administrators) and `notificationAdded`."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import strawberry
from strawberry import relay

from app.api.auth import require_viewer
from app.api.context import Info
from app.api.errors import BadRequest
from app.api.relay import after_id_key, build_connection, id_of, page_size
from app.api.types.notification import (
    AlertPriority,
    AlertRulesInfo,
    DeliveryAttemptInfo,
    DeliveryInfo,
    NotificationNode,
    WebhookEndpointInfo,
)
from app.notifications import delivery_repository as deliveries
from app.notifications import inbox, live
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
    after = int(after_id) if after_id is not None and str(after_id).isdigit() and len(after_id) < 19 else None
    if after_id is not None and after is None:
        raise BadRequest("BAD_USER_INPUT", "afterId: a delivery id from this list")
    async with info.context.services.db() as session:
        rows = await deliveries.dead(session, after=after, limit=size)
        logs = await deliveries.log_of(session, [r.id for r in rows])
    by_delivery: dict[int, list[DeliveryAttemptInfo]] = {}
    for line in logs:
        by_delivery.setdefault(line.delivery_id, []).append(DeliveryAttemptInfo(
            at=line.at, attempt=line.attempt, outcome=line.outcome, status_code=line.status_code, error=line.error,
            duration_ms=line.duration_ms))  # fmt: skip
    return [DeliveryInfo(id=strawberry.ID(str(d.id)), idempotency_key=d.idempotency_key, channel=d.channel,
                         priority=AlertPriority(d.priority), status=d.status, attempts=d.attempts,
                         next_attempt_at=d.next_attempt_at, last_error=d.last_error, created_at=d.created_at,
                         log=by_delivery.get(d.id, [])) for d in rows]  # fmt: skip


async def new_notifications(info: Info, after: relay.GlobalID | None) -> AsyncGenerator[NotificationNode, None]:
    """The signed-in reader's new in-app notifications, each once (app/notifications/live.py)."""
    user = await require_viewer(info)
    resumed = id_of(after, "Notification", "after") if after is not None else None
    services = info.context.services
    async for row in live.new_notifications(services.notifications, user.id, after=resumed):
        yield NotificationNode.from_model(row)
