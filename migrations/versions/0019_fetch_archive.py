"""The raw fetch archive: each successful fetch's body zstd-compressed (`fetch_archive`, sharing the fetch log row's
id; most bodies compressed against a recent one of their source, `reference_id`), and what each fetch produced
(`fetch_articles`). Bodies are stored EXTERNAL: already compressed, PostgreSQL's own
TOAST compression would spend CPU for nothing.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "fetch_archive",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("source_id", sa.BigInteger(), nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("status_code", sa.SmallInteger(), nullable=False),
        sa.Column("headers", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("raw_bytes", sa.Integer(), nullable=False),
        sa.Column("reference_id", sa.BigInteger(), nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["id"], ["fetch_log.id"], name=op.f("fk_fetch_archive_id_fetch_log"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"], name=op.f("fk_fetch_archive_source_id_sources"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["reference_id"], ["fetch_archive.id"],
                                name=op.f("fk_fetch_archive_reference_id_fetch_archive"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fetch_archive")),
    )  # fmt: skip
    op.execute("ALTER TABLE fetch_archive ALTER COLUMN body SET STORAGE EXTERNAL")
    op.create_index(op.f("ix_fetch_archive_fetched_at"), "fetch_archive", ["fetched_at"])
    op.create_index("ix_fetch_archive_source_fetched", "fetch_archive", ["source_id", "fetched_at"])
    op.create_index(op.f("ix_fetch_archive_reference_id"), "fetch_archive", ["reference_id"])
    op.create_index("ix_fetch_archive_references", "fetch_archive", ["source_id", "id"],
                    postgresql_where=sa.text("reference_id IS NULL"))  # fmt: skip
    op.create_table(
        "fetch_articles",
        sa.Column("fetch_id", sa.BigInteger(), nullable=False),
        sa.Column("article_id", sa.BigInteger(), nullable=False),
        sa.Column("change", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(["fetch_id"], ["fetch_log.id"], name=op.f("fk_fetch_articles_fetch_id_fetch_log"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["article_id"], ["articles.id"], name=op.f("fk_fetch_articles_article_id_articles"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("fetch_id", "article_id", "change", name=op.f("pk_fetch_articles")),
    )  # fmt: skip
    op.create_index(op.f("ix_fetch_articles_article_id"), "fetch_articles", ["article_id"])


def downgrade() -> None:
    op.drop_table("fetch_articles")
    op.drop_table("fetch_archive")
