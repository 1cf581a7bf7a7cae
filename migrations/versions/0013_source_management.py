"""Source management: the fields an administrator set, and indexes for deleting a source's articles

- `sources.admin_fields`: the columns (`name`, `site_url`) an administrator chose; the others follow the feed's own
  title and link after each fetch.
- An index behind every foreign key a deleted article or story is looked up by (read events, copies of an article,
  story representatives, stories merged into another, follows and mutes of a source): without them each deleted row
  scanned those tables whole, so deleting a source of 10,000 articles read the read events 10,000 times.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = (  # (name, table, column, only rows where)
    ("ix_read_events_article_id", "read_events", "article_id", None),
    ("ix_articles_duplicate_of", "articles", "duplicate_of_id", "duplicate_of_id IS NOT NULL"),
    ("ix_story_clusters_representative", "story_clusters", "representative_article_id", None),
    ("ix_story_clusters_merged_into", "story_clusters", "merged_into_id", "merged_into_id IS NOT NULL"),
    ("ix_source_follows_source_id", "source_follows", "source_id", None),
    ("ix_source_mutes_source_id", "source_mutes", "source_id", None),
)


def upgrade() -> None:
    op.add_column("sources", sa.Column("admin_fields", postgresql.ARRAY(sa.String(length=32)),
                                       server_default=sa.text("'{}'::varchar[]"), nullable=False))  # fmt: skip
    for name, table, column, where in INDEXES:
        op.create_index(name, table, [column], postgresql_where=sa.text(where) if where else None)


def downgrade() -> None:
    for name, table, _, _ in INDEXES:
        op.drop_index(name, table_name=table)
    op.drop_column("sources", "admin_fields")
