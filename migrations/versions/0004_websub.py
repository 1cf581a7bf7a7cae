"""WebSub subscriptions on sources

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = (
    ("websub_hub", sa.Text()),
    ("websub_topic", sa.Text()),
    ("websub_state", sa.String(length=16)),
    ("websub_token", sa.String(length=64)),
    ("websub_secret", sa.String(length=128)),
    ("websub_lease_expires_at", sa.DateTime(timezone=True)),
    ("websub_updated_at", sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    for name, type_ in COLUMNS:
        op.add_column("sources", sa.Column(name, type_, nullable=True))
    op.create_unique_constraint(op.f("uq_sources_websub_token"), "sources", ["websub_token"])


def downgrade() -> None:
    op.drop_constraint(op.f("uq_sources_websub_token"), "sources", type_="unique")
    for name, _ in reversed(COLUMNS):
        op.drop_column("sources", name)
