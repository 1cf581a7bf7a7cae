"""A reader's alerts as GraphQL sees them: in-app notifications, alert rules, webhook endpoints, deliveries and
their log (administrators), and the typed error of every alerts mutation."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from datetime import datetime

import strawberry
from strawberry import relay

from app.api.auth import viewer
from app.api.context import Info
from app.api.filters import topics_of
from app.api.relay import database_id
from app.api.types.enums import TopicEnum
from app.api.types.story import StoryNode, load_story
from app.notifications import inbox
from app.notifications.dead_deliveries import DeadDelivery
from app.notifications.errors import AlertErrorCode, AlertRejected
from app.notifications.models import AlertRules, Notification, WebhookEndpoint
from app.places.countries import InvalidRegion

AlertErrorCodeEnum = strawberry.enum(AlertErrorCode, name="AlertErrorCode")


@strawberry.type(description="Why an alerts operation was refused.")
class AlertError:
    code: AlertErrorCodeEnum  # type: ignore[valid-type]
    field: str | None
    message: str


def alert_refused(error: AlertRejected | InvalidRegion) -> list[AlertError]:
    code = AlertErrorCode.INVALID_REGION if isinstance(error, InvalidRegion) else error.code
    return [AlertError(code=code, field=error.field, message=str(error))]


@strawberry.enum(description="How soon an alert is due: URGENT (breaking, < 30 s), NORMAL (a followed story, "
                             "< 5 min), BATCH (digest).")  # fmt: skip
class AlertPriority(enum.Enum):
    URGENT = "urgent"
    NORMAL = "normal"
    BATCH = "batch"


@strawberry.type(name="Notification", description="An in-app alert: a story broke, or a story you follow grew.")
class NotificationNode(relay.Node):
    id: relay.NodeID[int]
    kind: str = strawberry.field(description="`breaking` or `story_update`.")
    priority: AlertPriority
    title: str
    created_at: datetime
    read: bool
    story_id: strawberry.Private[int]

    @strawberry.field(description="The story as it is now.")
    async def story(self, info: Info) -> StoryNode | None:
        return await load_story(info, self.story_id)

    @classmethod
    def from_model(cls, row: Notification) -> NotificationNode:
        return cls(id=row.id, kind=row.kind, priority=AlertPriority(row.priority), title=row.title,
                   created_at=row.created_at, read=row.read_at is not None, story_id=row.story_id)  # fmt: skip

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> Iterable[NotificationNode | None]:
        user = await viewer(info)
        ids = [database_id(i) for i in node_ids]
        if user is None:
            return [None for _ in ids]
        async with info.context.services.db() as session:
            rows = await inbox.owned(session, user.id, ids)
        return [cls.from_model(rows[i]) if i in rows else None for i in ids]


@strawberry.enum(description="NONE, HOURLY or DAILY (at the daily digest hour, your local time).")
class DigestFrequency(enum.Enum):
    NONE = "none"
    HOURLY = "hourly"
    DAILY = "daily"


@strawberry.type(description="What you are alerted about, when and how often. With no topics, sources or entities, "
                             "every breaking story.")  # fmt: skip
class AlertRulesInfo:
    breaking: bool
    story_updates: bool
    topics: list[TopicEnum]  # type: ignore[valid-type]
    source_ids: list[int] = strawberry.field(description="Database ids of sources (alerts when one covers a story).")
    entities: list[str] = strawberry.field(description='Entity keys, such as "per:angela merkel".')
    languages: list[str]
    region: str | None = strawberry.field(
        description="ISO 3166-1 alpha-2: breaking stories local to that country "
        "only (an article names a place there, or an outlet there covers it)."
    )
    time_zone: str
    quiet_start: int | None = strawberry.field(description="Minutes after local midnight.")
    quiet_end: int | None
    cap_per_hour: int
    digest: DigestFrequency

    @classmethod
    def from_model(cls, row: AlertRules) -> AlertRulesInfo:
        return cls(breaking=row.breaking, story_updates=row.story_updates, topics=topics_of(row.topics),
                   source_ids=list(row.source_ids), entities=list(row.entities), languages=list(row.languages),
                   region=row.region, time_zone=row.time_zone, quiet_start=row.quiet_start, quiet_end=row.quiet_end,
                   cap_per_hour=row.cap_per_hour, digest=DigestFrequency(row.digest))  # fmt: skip


@strawberry.input(description="Alert rules; a field left out keeps its default (not its current value).")
class AlertRulesInput:
    breaking: bool = True
    story_updates: bool = True
    topics: list[TopicEnum] = strawberry.field(default_factory=list)  # type: ignore[valid-type]
    source_ids: list[int] = strawberry.field(default_factory=list)
    entities: list[str] = strawberry.field(default_factory=list)
    languages: list[str] = strawberry.field(default_factory=list)
    region: str | None = strawberry.field(default=None, description="ISO 3166-1 alpha-2 such as DE: breaking stories "
                                          "local to that country only (INVALID_REGION otherwise).")  # fmt: skip
    time_zone: str = "UTC"
    quiet_start: int | None = None
    quiet_end: int | None = None
    cap_per_hour: int = 10
    digest: DigestFrequency = DigestFrequency.NONE


@strawberry.type(description="Where an app receives its reader's alerts: signed POSTs (see scripts/verify_webhook.py).")
class WebhookEndpointInfo:
    id: strawberry.ID
    api_key_id: strawberry.ID
    url: str
    active: bool
    created_at: datetime

    @classmethod
    def from_model(cls, row: WebhookEndpoint) -> WebhookEndpointInfo:
        return cls(id=strawberry.ID(str(row.id)), api_key_id=strawberry.ID(str(row.api_key_id)), url=row.url,
                   active=row.active, created_at=row.created_at)  # fmt: skip


@strawberry.type(description="One attempt of a delivery, or its replay.")
class DeliveryAttemptInfo:
    at: datetime
    attempt: int
    outcome: str
    status_code: int | None
    error: str | None
    duration_ms: float | None


@strawberry.type(description="One event to one reader on one push channel (webhook or email).")
class DeliveryInfo:
    id: strawberry.ID = strawberry.field(description="Pass to deliveriesReplay, or as deadDeliveries' `afterId`.")
    idempotency_key: str
    channel: str
    priority: AlertPriority
    status: str
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    created_at: datetime
    log: list[DeliveryAttemptInfo]

    @classmethod
    def from_dead(cls, dead: DeadDelivery) -> DeliveryInfo:
        d = dead.delivery
        return cls(id=strawberry.ID(str(d.id)), idempotency_key=d.idempotency_key, channel=d.channel,
                   priority=AlertPriority(d.priority), status=d.status, attempts=d.attempts,
                   next_attempt_at=d.next_attempt_at, last_error=d.last_error, created_at=d.created_at,
                   log=[DeliveryAttemptInfo(at=line.at, attempt=line.attempt, outcome=line.outcome,
                                            status_code=line.status_code, error=line.error,
                                            duration_ms=line.duration_ms) for line in dead.log])  # fmt: skip
