"""Readers' alerts: rules, followed stories, in-app notifications, webhook endpoints, deliveries and their log, hourly
caps, fan-out progress; a poisoned outbox event can be dead

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NOW = sa.text("now()")


def _user(table: str) -> sa.Column:
    return sa.Column(
        "user_id",
        sa.BigInteger(),
        sa.ForeignKey("users.id", name=f"fk_{table}_user_id_users", ondelete="CASCADE"),
        nullable=False,
    )


def upgrade() -> None:
    op.add_column("outbox", sa.Column("dead_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "alert_rules",
        _user("alert_rules"),
        sa.Column("breaking", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("story_updates", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("topics", postgresql.ARRAY(sa.String(32)), server_default=sa.text("'{}'::varchar[]"), nullable=False),
        sa.Column(
            "source_ids", postgresql.ARRAY(sa.BigInteger()), server_default=sa.text("'{}'::bigint[]"), nullable=False
        ),
        sa.Column(
            "entities", postgresql.ARRAY(sa.String(200)), server_default=sa.text("'{}'::varchar[]"), nullable=False
        ),
        sa.Column(
            "languages", postgresql.ARRAY(sa.String(16)), server_default=sa.text("'{}'::varchar[]"), nullable=False
        ),
        sa.Column("region", sa.String(64), nullable=True),
        sa.Column("time_zone", sa.String(64), server_default=sa.text("'UTC'"), nullable=False),
        sa.Column("quiet_start", sa.SmallInteger(), nullable=True),
        sa.Column("quiet_end", sa.SmallInteger(), nullable=True),
        sa.Column("cap_per_hour", sa.Integer(), server_default=sa.text("10"), nullable=False),
        sa.Column("digest", sa.String(8), server_default=sa.text("'none'"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_alert_rules")),
    )
    op.create_table(
        "story_follows",
        _user("story_follows"),
        sa.Column("story_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.ForeignKeyConstraint(
            ["story_id"],
            ["story_clusters.id"],
            name=op.f("fk_story_follows_story_id_story_clusters"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "story_id", name=op.f("pk_story_follows")),
    )
    op.create_index("ix_story_follows_story_id", "story_follows", ["story_id"])
    op.create_table(
        "notifications",
        sa.Column("id", sa.BigInteger(), nullable=False),
        _user("notifications"),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("priority", sa.String(8), nullable=False),
        sa.Column("story_id", sa.BigInteger(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("read_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
    )
    op.create_index("uq_notifications_event_user", "notifications", ["event_id", "user_id"], unique=True)
    op.create_index("ix_notifications_user_id", "notifications", ["user_id", "id"])
    op.create_index(
        "ix_notifications_user_unread", "notifications", ["user_id", "id"], postgresql_where=sa.text("read_at IS NULL")
    )
    op.create_index("ix_notifications_created_at", "notifications", ["created_at"])
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("api_key_id", sa.BigInteger(), nullable=False),
        _user("webhook_endpoints"),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret", sa.String(80), nullable=False),
        sa.Column("active", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.ForeignKeyConstraint(
            ["api_key_id"], ["api_keys.id"], name=op.f("fk_webhook_endpoints_api_key_id_api_keys"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_endpoints")),
        sa.UniqueConstraint("api_key_id", name=op.f("uq_webhook_endpoints_api_key_id")),
    )
    op.create_index("ix_webhook_endpoints_user_id", "webhook_endpoints", ["user_id"])
    op.create_table(
        "deliveries",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("idempotency_key", sa.Text(), nullable=False),
        _user("deliveries"),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("channel", sa.String(8), nullable=False),
        sa.Column("endpoint_id", sa.BigInteger(), nullable=True),
        sa.Column("priority", sa.String(8), nullable=False),
        sa.Column("status", sa.String(12), server_default=sa.text("'pending'"), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("payload", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("event_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["endpoint_id"],
            ["webhook_endpoints.id"],
            name=op.f("fk_deliveries_endpoint_id_webhook_endpoints"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deliveries")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_deliveries_idempotency_key")),
    )
    op.create_index(
        "ix_deliveries_due",
        "deliveries",
        ["channel", "next_attempt_at"],
        postgresql_where=sa.text("status IN ('pending', 'sending', 'failed')"),
    )
    op.create_index("ix_deliveries_dead", "deliveries", ["id"], postgresql_where=sa.text("status = 'dead'"))
    op.create_index("ix_deliveries_user_id", "deliveries", ["user_id"])
    op.create_index("ix_deliveries_endpoint_id", "deliveries", ["endpoint_id"])
    op.create_index("ix_deliveries_created_at", "deliveries", ["created_at"])
    op.create_table(
        "delivery_log",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("delivery_id", sa.BigInteger(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(12), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"], ["deliveries.id"], name=op.f("fk_delivery_log_delivery_id_deliveries"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delivery_log")),
    )
    op.create_index("ix_delivery_log_delivery_id", "delivery_log", ["delivery_id"])
    op.create_index("ix_delivery_log_at", "delivery_log", ["at"])
    op.create_table(
        "alert_hours",
        _user("alert_hours"),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "hour", name=op.f("pk_alert_hours")),
    )
    op.create_table(
        "notification_fanouts",
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("topic", sa.String(64), nullable=False),
        sa.Column("after_user_id", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("status", sa.String(12), server_default=sa.text("'pending'"), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("event_id", name=op.f("pk_notification_fanouts")),
    )
    op.create_index(
        "ix_notification_fanouts_pending",
        "notification_fanouts",
        ["topic", "event_id"],
        postgresql_where=sa.text("status = 'pending'"),
    )


def downgrade() -> None:
    for table in (
        "notification_fanouts",
        "alert_hours",
        "delivery_log",
        "deliveries",
        "webhook_endpoints",
        "notifications",
        "story_follows",
        "alert_rules",
    ):
        op.drop_table(table)
    op.drop_column("outbox", "dead_at")
