"""Stories by when they first appeared: the FRESHNESS topic feed pages on this never-changing key

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-21
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_story_clusters_first_seen", "story_clusters", ["first_seen_at", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_story_clusters_first_seen", table_name="story_clusters")
