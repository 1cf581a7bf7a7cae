"""The title-word vocabulary's trigram index without a pending list: the index sync is its only writer, and a typo
correction must never scan a list of not-yet-merged words (60 ms at 43k words instead of 2 ms)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-21
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER INDEX ix_search_terms_trgm SET (fastupdate = off)")
    op.execute("SELECT gin_clean_pending_list('ix_search_terms_trgm')")  # what is pending now goes into the index


def downgrade() -> None:
    op.execute("ALTER INDEX ix_search_terms_trgm RESET (fastupdate)")
