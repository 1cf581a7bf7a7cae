"""Share links lose `gone_at`, its trigger and its index: a watermark nothing reads since 0026's eviction queue
replaced it (a deleted target shows as a link with neither article_id nor story_id). The downgrade puts them back
empty: links emptied before it have no moment to give.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

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
    op.execute("DROP TRIGGER share_links_gone ON share_links")
    op.execute("DROP FUNCTION share_links_gone()")
    op.drop_index("ix_share_links_gone_at", table_name="share_links")
    op.drop_column("share_links", "gone_at")


def downgrade() -> None:
    op.add_column("share_links", sa.Column("gone_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        "ix_share_links_gone_at", "share_links", ["gone_at"], postgresql_where=sa.text("gone_at IS NOT NULL")
    )
    op.execute(GONE_FUNCTION)
    op.execute(
        "CREATE TRIGGER share_links_gone BEFORE UPDATE ON share_links FOR EACH ROW EXECUTE FUNCTION share_links_gone()"
    )
