"""A source's 404/410 streak remembers when it began (`crawl_schedule.gone_since`): the source is dead only once the
streak has lasted NEWSAGG_CRAWL_DEAD_AFTER_GONE_HOURS, not after three answers in six minutes. A streak under way
at the upgrade starts its clock at its next 404/410 (nullable, no rewrite).

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("crawl_schedule", sa.Column("gone_since", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("crawl_schedule", "gone_since")
