"""Where the merge passes have got to: one row holding the revision the latest pass saved with. The next pass
compares the stories written from that revision on, on whichever worker it runs; it used to pick the stories whose
latest article was published in the last ten minutes, which left out every story of a feed polled later than that.

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "story_merge_passes",
        sa.Column("id", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id", name=op.f("ck_story_merge_passes_one_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_story_merge_passes")),
    )


def downgrade() -> None:
    op.drop_table("story_merge_passes")
