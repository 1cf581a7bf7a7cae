"""initial data model

Revision ID: 0001
Revises:
Create Date: 2026-11-21 05:40:38.370359
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "outbox",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("topic", sa.String(length=64), nullable=False),
        sa.Column("dedupe_key", sa.Text(), nullable=True),
        sa.Column("payload", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox")),
        sa.UniqueConstraint("dedupe_key", name=op.f("uq_outbox_dedupe_key")),
    )
    op.create_index(
        "ix_outbox_undelivered",
        "outbox",
        ["topic", "id"],
        unique=False,
        postgresql_where=sa.text("delivered_at IS NULL"),
    )
    op.create_table(
        "sources",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("feed_url", sa.Text(), nullable=False),
        sa.Column("site_url", sa.Text(), nullable=True),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("kind", sa.Enum("rss", "atom", "json", "websub", name="source_kind"), nullable=False),
        sa.Column("category", sa.String(length=100), nullable=True),
        sa.Column("language", sa.String(length=16), nullable=True),
        sa.Column("authority", sa.Float(), server_default=sa.text("0.5"), nullable=False),
        sa.Column("min_interval_s", sa.Integer(), nullable=False),
        sa.Column("max_interval_s", sa.Integer(), nullable=False),
        sa.Column("status", sa.Enum("active", "paused", "dead", name="source_status"), nullable=False),
        sa.Column("etag", sa.Text(), nullable=True),
        sa.Column("last_modified", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("authority >= 0 AND authority <= 1", name=op.f("ck_sources_authority_range")),
        sa.CheckConstraint(
            "min_interval_s > 0 AND max_interval_s >= min_interval_s", name=op.f("ck_sources_interval_bounds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sources")),
        sa.UniqueConstraint("feed_url", name=op.f("uq_sources_feed_url")),
    )
    op.create_index(op.f("ix_sources_status"), "sources", ["status"], unique=False)
    op.create_table(
        "story_clusters",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("representative_article_id", sa.BigInteger(), nullable=True),
        sa.Column("simhash", sa.BigInteger(), nullable=True),
        sa.Column("primary_topic", sa.String(length=32), nullable=True),
        sa.Column(
            "topics",
            postgresql.ARRAY(sa.String(length=32)),
            server_default=sa.text("'{}'::varchar[]"),
            nullable=False,
        ),
        sa.Column("article_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("source_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("velocity", sa.Float(), server_default=sa.text("0"), nullable=False),
        sa.Column("is_breaking", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("breaking_started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("first_seen_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("last_updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("merged_into_id", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["merged_into_id"],
            ["story_clusters.id"],
            name=op.f("fk_story_clusters_merged_into_id_story_clusters"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_story_clusters")),
    )
    op.create_index(
        "ix_story_clusters_breaking",
        "story_clusters",
        ["breaking_started_at"],
        unique=False,
        postgresql_where=sa.text("is_breaking"),
    )
    op.create_index("ix_story_clusters_last_updated", "story_clusters", ["last_updated_at"], unique=False)
    op.create_table(
        "users",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=False),
        sa.Column("is_admin", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column(
            "preferred_languages",
            postgresql.ARRAY(sa.String(length=16)),
            server_default=sa.text("'{}'::varchar[]"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
    )
    op.create_index("uq_users_email_lower", "users", [sa.literal_column("lower(email)")], unique=True)
    op.create_table(
        "api_keys",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("key_hash", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_api_keys_user_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    op.create_index(op.f("ix_api_keys_user_id"), "api_keys", ["user_id"], unique=False)
    op.create_table(
        "articles",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("source_id", sa.BigInteger(), nullable=False),
        sa.Column("external_id", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("author", sa.Text(), nullable=True),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("crawled_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("content_hash", sa.BigInteger(), nullable=False),
        sa.Column("simhash", sa.BigInteger(), nullable=True),
        sa.Column("duplicate_of_id", sa.BigInteger(), nullable=True),
        sa.Column("language", sa.String(length=16), nullable=True),
        sa.Column(
            "topics",
            postgresql.ARRAY(sa.String(length=32)),
            server_default=sa.text("'{}'::varchar[]"),
            nullable=False,
        ),
        sa.Column("cluster_id", sa.BigInteger(), nullable=True),
        sa.Column("click_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("share_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "search_vector",
            postgresql.TSVECTOR(),
            sa.Computed(
                "setweight(to_tsvector('simple', coalesce(title, '')), 'A') || setweight(to_tsvector('simple', coalesce(summary, '')), 'B')",
                persisted=True,
            ),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["story_clusters.id"],
            name=op.f("fk_articles_cluster_id_story_clusters"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["duplicate_of_id"],
            ["articles.id"],
            name=op.f("fk_articles_duplicate_of_id_articles"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["source_id"], ["sources.id"], name=op.f("fk_articles_source_id_sources"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_articles")),
        sa.UniqueConstraint("source_id", "external_id", name=op.f("uq_articles_source_id_external_id")),
        sa.UniqueConstraint("url", name=op.f("uq_articles_url")),
    )
    # story_clusters <-> articles reference each other: this side is added once both tables exist.
    op.create_foreign_key(
        op.f("fk_story_clusters_representative_article_id_articles"),
        "story_clusters",
        "articles",
        ["representative_article_id"],
        ["id"],
        ondelete="SET NULL",
    )
    op.create_index(op.f("ix_articles_cluster_id"), "articles", ["cluster_id"], unique=False)
    op.create_index(op.f("ix_articles_language"), "articles", ["language"], unique=False)
    op.create_index("ix_articles_published_id", "articles", ["published_at", "id"], unique=False)
    op.create_index("ix_articles_search", "articles", ["search_vector"], unique=False, postgresql_using="gin")
    op.create_index("ix_articles_source_published", "articles", ["source_id", "published_at"], unique=False)
    op.create_index("ix_articles_topics", "articles", ["topics"], unique=False, postgresql_using="gin")
    op.create_table(
        "crawl_schedule",
        sa.Column("source_id", sa.BigInteger(), nullable=False),
        sa.Column("next_crawl_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("priority", sa.SmallInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "status",
            sa.Enum("pending", "in_flight", name="claim_status"),
            server_default="pending",
            nullable=False,
        ),
        sa.Column("last_triggered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_fetched_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("consecutive_failures", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "circuit",
            sa.Enum("closed", "open", "half_open", name="circuit_state"),
            server_default="closed",
            nullable=False,
        ),
        sa.Column("articles_per_hour", sa.Float(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "hourly_histogram",
            postgresql.ARRAY(sa.Integer()),
            server_default=sa.text("array_fill(0, ARRAY[24])"),
            nullable=False,
        ),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.CheckConstraint("cardinality(hourly_histogram) = 24", name=op.f("ck_crawl_schedule_histogram_24_hours")),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["sources.id"],
            name=op.f("fk_crawl_schedule_source_id_sources"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("source_id", name=op.f("pk_crawl_schedule")),
    )
    op.create_index(
        "ix_crawl_schedule_due",
        "crawl_schedule",
        ["next_crawl_at"],
        unique=False,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_table(
        "fetch_log",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("source_id", sa.BigInteger(), nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("status_code", sa.SmallInteger(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("items_seen", sa.Integer(), nullable=False),
        sa.Column("items_new", sa.Integer(), nullable=False),
        sa.Column("error_class", sa.String(length=64), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["source_id"], ["sources.id"], name=op.f("fk_fetch_log_source_id_sources"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fetch_log")),
    )
    op.create_index(op.f("ix_fetch_log_fetched_at"), "fetch_log", ["fetched_at"], unique=False)
    op.create_index("ix_fetch_log_source_fetched", "fetch_log", ["source_id", "fetched_at"], unique=False)
    op.create_table(
        "source_follows",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("source_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["sources.id"],
            name=op.f("fk_source_follows_source_id_sources"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_source_follows_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_id", "source_id", name=op.f("pk_source_follows")),
    )
    op.create_table(
        "source_mutes",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("source_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"], ["sources.id"], name=op.f("fk_source_mutes_source_id_sources"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_source_mutes_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_id", "source_id", name=op.f("pk_source_mutes")),
    )
    op.create_table(
        "topic_follows",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("topic", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_topic_follows_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_id", "topic", name=op.f("pk_topic_follows")),
    )
    op.create_table(
        "user_interest",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column(
            "topic_weights",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("version", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_user_interest_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_user_interest")),
    )
    op.create_table(
        "read_events",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("article_id", sa.BigInteger(), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column(
            "action",
            sa.Enum("click", "read", "share", "save", "dismiss", name="engagement_action"),
            nullable=False,
        ),
        sa.Column("dwell_ms", sa.Integer(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["article_id"],
            ["articles.id"],
            name=op.f("fk_read_events_article_id_articles"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_read_events_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_read_events")),
        sa.UniqueConstraint(
            "user_id",
            "article_id",
            "session_id",
            "action",
            name=op.f("uq_read_events_user_id_article_id_session_id_action"),
        ),
    )
    op.create_index("ix_read_events_user_at", "read_events", ["user_id", "at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_read_events_user_at", table_name="read_events")
    op.drop_table("read_events")
    op.drop_table("user_interest")
    op.drop_table("topic_follows")
    op.drop_table("source_mutes")
    op.drop_table("source_follows")
    op.drop_index("ix_fetch_log_source_fetched", table_name="fetch_log")
    op.drop_index(op.f("ix_fetch_log_fetched_at"), table_name="fetch_log")
    op.drop_table("fetch_log")
    op.drop_index("ix_crawl_schedule_due", table_name="crawl_schedule", postgresql_where=sa.text("status = 'pending'"))
    op.drop_table("crawl_schedule")
    op.drop_index("ix_articles_topics", table_name="articles", postgresql_using="gin")
    op.drop_index("ix_articles_source_published", table_name="articles")
    op.drop_index("ix_articles_search", table_name="articles", postgresql_using="gin")
    op.drop_index("ix_articles_published_id", table_name="articles")
    op.drop_index(op.f("ix_articles_language"), table_name="articles")
    op.drop_index(op.f("ix_articles_cluster_id"), table_name="articles")
    op.drop_constraint(
        op.f("fk_story_clusters_representative_article_id_articles"), "story_clusters", type_="foreignkey"
    )
    op.drop_table("articles")
    op.drop_index(op.f("ix_api_keys_user_id"), table_name="api_keys")
    op.drop_table("api_keys")
    op.drop_index("uq_users_email_lower", table_name="users")
    op.drop_table("users")
    op.drop_index("ix_story_clusters_last_updated", table_name="story_clusters")
    op.drop_index("ix_story_clusters_breaking", table_name="story_clusters", postgresql_where=sa.text("is_breaking"))
    op.drop_table("story_clusters")
    op.drop_index(op.f("ix_sources_status"), table_name="sources")
    op.drop_table("sources")
    op.drop_index("ix_outbox_undelivered", table_name="outbox", postgresql_where=sa.text("delivered_at IS NULL"))
    op.drop_table("outbox")
    for enum_name in ("engagement_action", "circuit_state", "claim_status", "source_status", "source_kind"):
        sa.Enum(name=enum_name).drop(op.get_bind(), checkfirst=True)
