"""Retention: an index behind each age the hourly retention pass deletes by

- `articles.crawled_at`: articles are kept for a time after they were stored (app/retention/policy.py);
- `story_clusters.last_updated_at` of stories left empty or merged into another, partial: they are few among many;
- `read_events.at`: reading history is kept for a time (the existing index leads with the reader);
- `user_sessions.expires_at`, and `revoked_at` partial (most sessions are never revoked): sign-ins that ended.
Without them each batch scanned its table whole: a retention pass over a million articles never finished.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = (  # (name, table, column, only rows where)
    ("ix_articles_crawled_at", "articles", "crawled_at", None),
    ("ix_story_clusters_retired", "story_clusters", "last_updated_at",
     "article_count = 0 OR merged_into_id IS NOT NULL"),
    ("ix_read_events_at", "read_events", "at", None),
    ("ix_user_sessions_expires_at", "user_sessions", "expires_at", None),
    ("ix_user_sessions_revoked_at", "user_sessions", "revoked_at", "revoked_at IS NOT NULL"),
)  # fmt: skip


def upgrade() -> None:
    for name, table, column, where in INDEXES:
        op.create_index(name, table, [column], postgresql_where=sa.text(where) if where else None)


def downgrade() -> None:
    for name, table, _, _ in INDEXES:
        op.drop_index(name, table_name=table)
