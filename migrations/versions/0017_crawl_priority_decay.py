"""Crawl priority that decays: when a source's priority was last set

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("crawl_schedule", sa.Column("priority_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("crawl_schedule", "priority_at")
