"""Story rows compress their growing columns with LZ4: every clustering batch rewrites each story it changed whole,
and a story of a few dozen articles and more holds a centroid of 300-450 terms (8-12 KB of JSON, so TOASTed and
compressed on every write), its outlets and its recent arrivals. PostgreSQL's default pglz compresses several
times slower than LZ4; the same batch upsert of 48 stories with such centroids took 56-69 ms with LZ4 against
82-97 ms with pglz, in pairs on the loaded two-core machine.

Only values written from now on are LZ4 (nothing is rewritten, no lock held beyond the catalog change); both kinds
read the same. A server built without LZ4 keeps pglz.

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("centroid", "source_ids", "recent_arrivals")  # rewritten with every save, growing with the story


def _compress(method: str) -> str:
    return "ALTER TABLE story_clusters " + ", ".join(f"ALTER COLUMN {c} SET COMPRESSION {method}" for c in COLUMNS)


def upgrade() -> None:  # asked of the server in SQL, so that `alembic upgrade --sql` writes it too
    op.execute(f"""
DO $$ BEGIN
  IF EXISTS (SELECT FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)) THEN
    {_compress("lz4")};
  END IF;
END $$""")


def downgrade() -> None:
    op.execute(_compress("DEFAULT"))  # the server's default_toast_compression, as before
