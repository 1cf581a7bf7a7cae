"""Named entities per article: the people, organisations and places its headline and summary name

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "article_entities",
        sa.Column("article_id", sa.BigInteger(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=3), nullable=False),
        sa.Column("mentions", sa.SmallInteger(), nullable=False),
        sa.Column("role", sa.String(length=40), nullable=True),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["article_id"], ["articles.id"], name=op.f("fk_article_entities_article_id_articles"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("article_id", "key", name=op.f("pk_article_entities")),
    )
    op.create_index("ix_article_entities_key_seen", "article_entities", ["key", "seen_at"])
    op.create_index("ix_article_entities_seen", "article_entities", ["seen_at"])


def downgrade() -> None:
    op.drop_index("ix_article_entities_seen", table_name="article_entities")
    op.drop_index("ix_article_entities_key_seen", table_name="article_entities")
    op.drop_table("article_entities")
