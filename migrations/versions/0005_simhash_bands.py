"""LSH band keys of each article's SimHash, indexed for near-duplicate candidate lookup

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("articles", sa.Column("simhash_bands", postgresql.ARRAY(sa.Integer()), nullable=True))
    op.create_index("ix_articles_simhash_bands", "articles", ["simhash_bands"], postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("ix_articles_simhash_bands", table_name="articles", postgresql_using="gin")
    op.drop_column("articles", "simhash_bands")
