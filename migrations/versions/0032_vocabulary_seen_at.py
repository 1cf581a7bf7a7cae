"""The clustering vocabulary remembers when each term was last counted (`seen_at`), so retention can forget the
rare terms no article has used for long (typos, one-off names): the table, which every new clustering worker reads
whole, no longer grows with every word ever seen. Existing rows count as seen now (a constant default: no rewrite).

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("story_vocabulary", sa.Column("seen_at", sa.DateTime(timezone=True),
                                                server_default=sa.text("now()"), nullable=False))  # fmt: skip
    op.create_index("ix_story_vocabulary_seen_at", "story_vocabulary", ["seen_at"])


def downgrade() -> None:
    op.drop_index("ix_story_vocabulary_seen_at", table_name="story_vocabulary")
    op.drop_column("story_vocabulary", "seen_at")
