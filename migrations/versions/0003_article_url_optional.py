"""Articles known only by their feed id (no link) are kept: url becomes optional

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.alter_column("articles", "url", existing_type=sa.Text(), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM articles WHERE url IS NULL")
    op.alter_column("articles", "url", existing_type=sa.Text(), nullable=False)
