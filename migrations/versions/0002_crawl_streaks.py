"""Crawl schedule: 404/410 and throttle streaks, permanent-redirect tracking

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("crawl_schedule", sa.Column("gone_streak", sa.Integer(), server_default=sa.text("0"), nullable=False))
    op.add_column(
        "crawl_schedule", sa.Column("throttle_streak", sa.Integer(), server_default=sa.text("0"), nullable=False)
    )
    op.add_column("crawl_schedule", sa.Column("redirect_url", sa.Text(), nullable=True))
    op.add_column(
        "crawl_schedule", sa.Column("redirect_streak", sa.Integer(), server_default=sa.text("0"), nullable=False)
    )


def downgrade() -> None:
    for column in ("redirect_streak", "redirect_url", "throttle_streak", "gone_streak"):
        op.drop_column("crawl_schedule", column)
