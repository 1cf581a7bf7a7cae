"""Places: a source's country and outlet kind (set or inferred), the places each article names, a reader's home region

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-26
"""

import itertools
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.places.gazetteer import places_of
from app.places.outlets import infer

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("sources", sa.Column("country", sa.String(length=2), nullable=True))
    op.add_column("sources", sa.Column("outlet_kind", sa.String(length=16), server_default="unknown", nullable=False))
    op.add_column("sources", sa.Column("outlet_inferred", sa.Boolean(), server_default=sa.text("true"),
                                       nullable=False))  # fmt: skip
    op.create_index("ix_sources_country", "sources", ["country"])
    op.add_column("users", sa.Column("home_region", sa.String(length=2), nullable=True))
    op.create_table(
        "article_places",
        sa.Column("article_id", sa.BigInteger(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("country", sa.String(length=2), nullable=False),
        sa.Column("region", sa.String(length=6), nullable=True),
        sa.Column("mentions", sa.SmallInteger(), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["article_id"], ["articles.id"], name=op.f("fk_article_places_article_id_articles"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("article_id", "key", name=op.f("pk_article_places")),
    )
    op.create_index("ix_article_places_country_seen", "article_places", ["country", "seen_at"])
    _infer_outlets()
    _places_of_stored_articles()


def _infer_outlets() -> None:
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, site_url, feed_url, language FROM sources")).all()
    for row in rows:
        outlet = infer(row.site_url, row.feed_url, row.language)
        bind.execute(sa.text("UPDATE sources SET country = :country, outlet_kind = :kind WHERE id = :id"),
                     {"country": outlet.country, "kind": outlet.kind.value, "id": row.id})  # fmt: skip


def _places_of_stored_articles() -> None:
    """What ingest now stores for each new article, for those stored before: their places, from their entities."""
    bind = op.get_bind()
    found = bind.execute(sa.text(
        "SELECT e.article_id, e.key, e.name, e.mentions, e.seen_at, s.country FROM article_entities e "
        "JOIN articles a ON a.id = e.article_id JOIN sources s ON s.id = a.source_id "
        "WHERE e.kind = 'LOC' ORDER BY e.article_id"
    )).all()  # fmt: skip
    rows = []
    for _, named in itertools.groupby(found, key=lambda row: row.article_id):
        named = list(named)
        for row, place in zip(named, places_of([r.name for r in named], named[0].country), strict=True):
            if place is not None:
                rows.append({"article_id": row.article_id, "key": row.key, "name": row.name, "country": place.country,
                             "region": place.region, "mentions": row.mentions, "seen_at": row.seen_at})  # fmt: skip
    if rows:
        bind.execute(
            sa.text(
                "INSERT INTO article_places (article_id, key, name, country, region, mentions, seen_at) "
                "VALUES (:article_id, :key, :name, :country, :region, :mentions, :seen_at)"
            ),
            rows,
        )


def downgrade() -> None:
    op.drop_index("ix_article_places_country_seen", table_name="article_places")
    op.drop_table("article_places")
    op.drop_column("users", "home_region")
    op.drop_index("ix_sources_country", table_name="sources")
    op.drop_column("sources", "outlet_inferred")
    op.drop_column("sources", "outlet_kind")
    op.drop_column("sources", "country")
