"""Tables of readers' alert rules, followed stories, in-app notifications, webhook endpoints, deliveries and their
log, the hourly caps and the fan-out progress of each outbox event."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, SmallInteger, String, Text, text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, created_at_column

EMPTY_TEXT_ARRAY = text("'{}'::varchar[]")


class AlertRules(Base):
    """What one reader wants to be alerted about, and when. No topics, sources or entities: every breaking story."""

    __tablename__ = "alert_rules"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    breaking: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    story_updates: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    topics: Mapped[list[str]] = mapped_column(ARRAY(String(32)), server_default=EMPTY_TEXT_ARRAY)
    source_ids: Mapped[list[int]] = mapped_column(ARRAY(BigInteger), server_default=text("'{}'::bigint[]"))
    entities: Mapped[list[str]] = mapped_column(ARRAY(String(200)), server_default=EMPTY_TEXT_ARRAY)
    languages: Mapped[list[str]] = mapped_column(ARRAY(String(16)), server_default=EMPTY_TEXT_ARRAY)
    region: Mapped[str | None] = mapped_column(String(64))  # ISO 3166-1 alpha-2 (app/places)
    time_zone: Mapped[str] = mapped_column(String(64), server_default=text("'UTC'"))
    quiet_start: Mapped[int | None] = mapped_column(SmallInteger)  # minute of the local day
    quiet_end: Mapped[int | None] = mapped_column(SmallInteger)
    cap_per_hour: Mapped[int] = mapped_column(Integer, server_default=text("10"))
    digest: Mapped[str] = mapped_column(String(8), server_default=text("'none'"))  # none / hourly / daily
    updated_at: Mapped[datetime] = created_at_column()


class StoryFollow(Base):
    __tablename__ = "story_follows"
    __table_args__ = (Index("ix_story_follows_story_id", "story_id"),)

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    story_id: Mapped[int] = mapped_column(ForeignKey("story_clusters.id", ondelete="CASCADE"), primary_key=True)
    created_at: Mapped[datetime] = created_at_column()


class Notification(Base):
    """The in-app channel: one row per (reader, event) is the delivery itself (its idempotency key is the pair)."""

    __tablename__ = "notifications"
    __table_args__ = (
        Index("uq_notifications_event_user", "event_id", "user_id", unique=True),
        Index("ix_notifications_user_id", "user_id", "id"),
        Index("ix_notifications_user_unread", "user_id", "id", postgresql_where=text("read_at IS NULL")),
        Index("ix_notifications_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    event_id: Mapped[int] = mapped_column(BigInteger)  # the outbox event (which retention may delete first)
    kind: Mapped[str] = mapped_column(String(16))  # breaking / story_update
    priority: Mapped[str] = mapped_column(String(8))  # urgent / normal
    story_id: Mapped[int] = mapped_column(BigInteger)
    title: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = created_at_column()
    read_at: Mapped[datetime | None]


class WebhookEndpoint(Base):
    """Where an app (one API key) receives its reader's alerts, signed with `secret`."""

    __tablename__ = "webhook_endpoints"
    __table_args__ = (Index("ix_webhook_endpoints_user_id", "user_id"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    api_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(Text)
    secret: Mapped[str] = mapped_column(String(80))
    active: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    created_at: Mapped[datetime] = created_at_column()


class Delivery(Base):
    """One event to one reader on one push channel (webhook: per endpoint; email: a digest entry)."""

    __tablename__ = "deliveries"
    __table_args__ = (
        Index(
            "ix_deliveries_due",
            "channel",
            "next_attempt_at",
            postgresql_where=text("status IN ('pending', 'sending', 'failed')"),
        ),
        Index("ix_deliveries_dead", "id", postgresql_where=text("status = 'dead'")),
        Index("ix_deliveries_user_id", "user_id"),
        Index("ix_deliveries_endpoint_id", "endpoint_id"),
        Index("ix_deliveries_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(Text, unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    event_id: Mapped[int] = mapped_column(BigInteger)
    channel: Mapped[str] = mapped_column(String(8))  # webhook / email
    endpoint_id: Mapped[int | None] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    priority: Mapped[str] = mapped_column(String(8))  # urgent / normal / batch
    status: Mapped[str] = mapped_column(String(12), server_default=text("'pending'"))
    attempts: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    next_attempt_at: Mapped[datetime] = created_at_column()
    last_error: Mapped[str | None] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB)
    event_at: Mapped[datetime | None]  # when the event happened (the story broke): latency is measured from it
    created_at: Mapped[datetime] = created_at_column()
    delivered_at: Mapped[datetime | None]


class DeliveryAttempt(Base):
    """The delivery log: every attempt and every replay, with its outcome."""

    __tablename__ = "delivery_log"
    __table_args__ = (Index("ix_delivery_log_delivery_id", "delivery_id"), Index("ix_delivery_log_at", "at"))

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("deliveries.id", ondelete="CASCADE"))
    at: Mapped[datetime] = created_at_column()
    attempt: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String(12))  # delivered / covered / failed / dead / refused / replayed
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[float | None]


class AlertHour(Base):
    """How many alerts a reader was sent in one hour: the cap per hour, counted atomically by the fan-out."""

    __tablename__ = "alert_hours"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    hour: Mapped[datetime] = mapped_column(primary_key=True)
    sent: Mapped[int] = mapped_column(Integer)


class Fanout(Base):
    """One outbox event being turned into notifications and deliveries, reader batch after reader batch."""

    __tablename__ = "notification_fanouts"
    __table_args__ = (
        Index("ix_notification_fanouts_pending", "topic", "event_id", postgresql_where=text("status = 'pending'")),
    )

    event_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    topic: Mapped[str] = mapped_column(String(64))
    after_user_id: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))  # readers done so far
    status: Mapped[str] = mapped_column(String(12), server_default=text("'pending'"))  # pending / done / dead
    attempts: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    last_error: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[datetime] = created_at_column()
    created_at: Mapped[datetime] = created_at_column()
    done_at: Mapped[datetime | None]
