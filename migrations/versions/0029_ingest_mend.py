"""Texts whose body search has not indexed yet (`search_language` NULL: stored before migration 0027), in a partial
index of their own: the worker's start asks it whether any are left (app/search/bodies.py), an index probe that finds
the index empty once they are all indexed, rather than a read of every text's row at each start and each day.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_article_texts_unindexed", "article_texts", ["article_id"],
                    postgresql_where=sa.text("search_language IS NULL"))  # fmt: skip


def downgrade() -> None:
    op.drop_index("ix_article_texts_unindexed", table_name="article_texts")
