"""Story clustering state: centroids, strongest terms (GIN), covering sources, term document frequencies

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("story_clusters", sa.Column("centroid", postgresql.JSONB(astext_type=sa.Text()),
                                              server_default=sa.text("'{}'::jsonb"), nullable=False))  # fmt: skip
    op.add_column("story_clusters", sa.Column("top_terms", postgresql.ARRAY(sa.String(length=64)),
                                              server_default=sa.text("'{}'::varchar[]"), nullable=False))  # fmt: skip
    op.add_column("story_clusters", sa.Column("source_ids", postgresql.ARRAY(sa.BigInteger()),
                                              server_default=sa.text("'{}'::bigint[]"), nullable=False))  # fmt: skip
    op.create_index("ix_story_clusters_top_terms", "story_clusters", ["top_terms"], postgresql_using="gin")
    op.create_table(
        "story_vocabulary",
        sa.Column("term", sa.String(length=64), nullable=False),
        sa.Column("documents", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("term", name=op.f("pk_story_vocabulary")),
    )


def downgrade() -> None:
    op.drop_table("story_vocabulary")
    op.drop_index("ix_story_clusters_top_terms", table_name="story_clusters", postgresql_using="gin")
    for column in ("source_ids", "top_terms", "centroid"):
        op.drop_column("story_clusters", column)
