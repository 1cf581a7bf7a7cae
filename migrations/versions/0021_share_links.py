"""Share links: `share_links` (a code per reader and article or story), `share_link_days` (clicks and previews by
day and referrer host), `share_click_batches` (click batches already written) and `share_link_keys` (the key that
signs codes, made on first use).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TARGET_KIND = postgresql.ENUM("article", "story", name="share_target_kind", create_type=False)
# A target's deletion sets the link's id to NULL (the foreign key's action): the moment is noted, and the workers
# evict the code's cached destination (app/sharing/eviction.py), so it answers 410 within a flush interval.
GONE_FUNCTION = """
CREATE FUNCTION share_links_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.article_id IS NULL AND NEW.story_id IS NULL AND NEW.gone_at IS NULL THEN
    NEW.gone_at := now();
  END IF;
  RETURN NEW;
END $$
"""


def upgrade() -> None:
    TARGET_KIND.create(op.get_bind(), checkfirst=True)
    op.create_table(
        "share_links",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("code", sa.String(length=16), nullable=False),
        sa.Column("creator_id", sa.BigInteger(), nullable=False),
        sa.Column("target_kind", TARGET_KIND, nullable=False),
        sa.Column("article_id", sa.BigInteger(), nullable=True),
        sa.Column("story_id", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("from_merge", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("gone_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["creator_id"], ["users.id"], name=op.f("fk_share_links_creator_id_users"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["article_id"], ["articles.id"], name=op.f("fk_share_links_article_id_articles"),
                                ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["story_id"], ["story_clusters.id"],
                                name=op.f("fk_share_links_story_id_story_clusters"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_share_links")),
        sa.UniqueConstraint("code", name=op.f("uq_share_links_code")),
    )  # fmt: skip
    op.create_index("uq_share_links_creator_article", "share_links", ["creator_id", "article_id"], unique=True,
                    postgresql_where=sa.text("article_id IS NOT NULL AND NOT from_merge"))  # fmt: skip
    op.create_index("uq_share_links_creator_story", "share_links", ["creator_id", "story_id"], unique=True,
                    postgresql_where=sa.text("story_id IS NOT NULL"))  # fmt: skip
    op.create_index("ix_share_links_creator_id", "share_links", ["creator_id"])
    op.create_index("ix_share_links_article_id", "share_links", ["article_id"])
    op.create_index("ix_share_links_story_id", "share_links", ["story_id"])
    op.create_index(
        "ix_share_links_gone_at", "share_links", ["gone_at"], postgresql_where=sa.text("gone_at IS NOT NULL")
    )
    op.execute(GONE_FUNCTION)
    op.execute(
        "CREATE TRIGGER share_links_gone BEFORE UPDATE ON share_links FOR EACH ROW EXECUTE FUNCTION share_links_gone()"
    )
    op.create_table(
        "share_link_days",
        sa.Column("link_id", sa.BigInteger(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("referrer_host", sa.String(length=100), nullable=False),
        sa.Column("clicks", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("previews", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.ForeignKeyConstraint(["link_id"], ["share_links.id"], name=op.f("fk_share_link_days_link_id_share_links"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("link_id", "day", "referrer_host", name=op.f("pk_share_link_days")),
    )  # fmt: skip
    op.create_table(
        "share_click_batches",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("flushed_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_share_click_batches")),
    )
    op.create_index("ix_share_click_batches_flushed_at", "share_click_batches", ["flushed_at"])
    op.create_table(
        "share_link_keys",
        sa.Column("id", sa.SmallInteger(), nullable=False),
        sa.Column("key", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_share_link_keys")),
    )


def downgrade() -> None:
    op.drop_table("share_link_keys")
    op.drop_index("ix_share_click_batches_flushed_at", table_name="share_click_batches")
    op.drop_table("share_click_batches")
    op.drop_table("share_link_days")
    op.drop_table("share_links")
    op.execute("DROP FUNCTION share_links_gone()")
    TARGET_KIND.drop(op.get_bind(), checkfirst=True)
