"""Clustering state workers can cache: story centroids keep their IDF-weighted norm, stories and vocabulary rows
carry the revision that last wrote them; the strongest-terms column and its index go (workers find candidate stories
in their own copy, app/stories/store.py). Stories count their articles' topics and list their languages (both
filterable) and keep their recent arrivals (velocity); unclustered articles are indexed

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Stories clustered before this revision get their norm with an IDF of 4 for every term (about a headline term's);
# the clusterer corrects it term by term as the story changes.
_APPROXIMATE = """
    UPDATE story_clusters SET centroid_norm = 4.0 * sqrt(coalesce(
        (SELECT sum(value::float8 * value::float8) FROM jsonb_each_text(centroid)), 0))
"""


def upgrade() -> None:
    op.execute("CREATE SEQUENCE story_revision_seq")
    op.add_column("story_clusters", sa.Column("centroid_norm", sa.Float(), server_default=sa.text("0"), nullable=False))
    for table in ("story_clusters", "story_vocabulary"):
        op.add_column(table, sa.Column("revision", sa.BigInteger(), server_default=sa.text("0"), nullable=False))
        op.create_index(f"ix_{table}_revision", table, ["revision"])
    op.execute(_APPROXIMATE)
    op.drop_index("ix_story_clusters_top_terms", table_name="story_clusters", postgresql_using="gin")
    op.drop_column("story_clusters", "top_terms")
    op.add_column("story_clusters", sa.Column("topic_counts", postgresql.JSONB(astext_type=sa.Text()),
                                              server_default=sa.text("'{}'::jsonb"), nullable=False))  # fmt: skip
    op.add_column("story_clusters", sa.Column("languages", postgresql.ARRAY(sa.String(length=16)),
                                              server_default=sa.text("'{}'::varchar[]"), nullable=False))  # fmt: skip
    op.add_column("story_clusters", sa.Column("recent_arrivals", postgresql.JSONB(astext_type=sa.Text()),
                                              server_default=sa.text("'[]'::jsonb"), nullable=False))  # fmt: skip
    op.create_index("ix_story_clusters_topics", "story_clusters", ["topics"], postgresql_using="gin")
    op.create_index("ix_story_clusters_languages", "story_clusters", ["languages"], postgresql_using="gin")
    # articles understood and waiting for a story (a clustering job takes them in one batch)
    op.create_index("ix_articles_unclustered", "articles", ["id"], postgresql_where=sa.text("cluster_id IS NULL"))


def downgrade() -> None:
    op.drop_index("ix_articles_unclustered", table_name="articles", postgresql_where=sa.text("cluster_id IS NULL"))
    op.drop_index("ix_story_clusters_languages", table_name="story_clusters", postgresql_using="gin")
    op.drop_index("ix_story_clusters_topics", table_name="story_clusters", postgresql_using="gin")
    op.drop_column("story_clusters", "recent_arrivals")
    op.drop_column("story_clusters", "languages")
    op.drop_column("story_clusters", "topic_counts")
    op.add_column("story_clusters", sa.Column("top_terms", postgresql.ARRAY(sa.String(length=64)),
                                              server_default=sa.text("'{}'::varchar[]"), nullable=False))  # fmt: skip
    op.create_index("ix_story_clusters_top_terms", "story_clusters", ["top_terms"], postgresql_using="gin")
    for table in ("story_vocabulary", "story_clusters"):
        op.drop_index(f"ix_{table}_revision", table_name=table)
        op.drop_column(table, "revision")
    op.drop_column("story_clusters", "centroid_norm")
    op.execute("DROP SEQUENCE story_revision_seq")
