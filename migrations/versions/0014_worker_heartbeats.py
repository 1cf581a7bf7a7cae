"""Worker heartbeats, and the worker holding each in-flight claim: a dead worker's claims return at once

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=100), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workers")),
    )
    op.add_column("crawl_schedule", sa.Column("claimed_by", sa.String(length=100), nullable=True))
    op.create_index(
        "ix_crawl_schedule_in_flight", "crawl_schedule", ["last_triggered_at"],
        postgresql_where=sa.text("status = 'in_flight'"),
    )  # fmt: skip


def downgrade() -> None:
    op.drop_index("ix_crawl_schedule_in_flight", table_name="crawl_schedule")
    op.drop_column("crawl_schedule", "claimed_by")
    op.drop_table("workers")
