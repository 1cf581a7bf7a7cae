"""A hub's pushes raise their source's crawl priority once per window: when a push last raised it

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("crawl_schedule", sa.Column("websub_raised_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("crawl_schedule", "websub_raised_at")
