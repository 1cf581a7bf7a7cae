"""Share links whose cached destination changed: `share_link_evictions`, a queue fed by triggers on every writer of
what a destination is made of (a link repointed, emptied or deleted, as when its creator's account is deleted; a
story's representative article or the story it merged into; an article's URL), drained by the workers
(app/sharing/eviction.py). The `gone_at` watermark it replaces missed links changed in other ways.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A story's links, and the links of the stories merged into it: they lead where it leads (app/sharing/repository.py).
# Each branch of a UNION ALL is one index lookup (share_links by article or story, story_clusters by representative or
# merged_into): a mass UPDATE of articles' URLs costs a few index probes per row, never a scan.
FUNCTIONS = [
    """
CREATE FUNCTION share_link_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO share_link_evictions (code) VALUES (OLD.code);
  RETURN NULL;
END $$
""",
    """
CREATE FUNCTION share_story_lead_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO share_link_evictions (code)
  SELECT l.code FROM share_links l WHERE l.story_id = NEW.id
  UNION ALL
  SELECT l.code FROM story_clusters m JOIN share_links l ON l.story_id = m.id WHERE m.merged_into_id = NEW.id;
  RETURN NULL;
END $$
""",
    """
CREATE FUNCTION share_article_url_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO share_link_evictions (code)
  SELECT l.code FROM share_links l WHERE l.article_id = NEW.id
  UNION ALL
  SELECT l.code FROM story_clusters s JOIN share_links l ON l.story_id = s.id WHERE s.representative_article_id = NEW.id
  UNION ALL
  SELECT l.code FROM story_clusters s JOIN story_clusters m ON m.merged_into_id = s.id
    JOIN share_links l ON l.story_id = m.id
   WHERE s.representative_article_id = NEW.id;
  RETURN NULL;
END $$
""",
]
TRIGGERS = [
    """CREATE TRIGGER share_link_changed AFTER UPDATE OF article_id, story_id ON share_links FOR EACH ROW
       WHEN (OLD.article_id IS DISTINCT FROM NEW.article_id OR OLD.story_id IS DISTINCT FROM NEW.story_id)
       EXECUTE FUNCTION share_link_changed()""",
    """CREATE TRIGGER share_link_deleted AFTER DELETE ON share_links FOR EACH ROW
       EXECUTE FUNCTION share_link_changed()""",
    """CREATE TRIGGER share_story_lead_changed AFTER UPDATE OF representative_article_id, merged_into_id
       ON story_clusters FOR EACH ROW
       WHEN (OLD.representative_article_id IS DISTINCT FROM NEW.representative_article_id
             OR OLD.merged_into_id IS DISTINCT FROM NEW.merged_into_id)
       EXECUTE FUNCTION share_story_lead_changed()""",
    """CREATE TRIGGER share_article_url_changed AFTER UPDATE OF url ON articles FOR EACH ROW
       WHEN (OLD.url IS DISTINCT FROM NEW.url)
       EXECUTE FUNCTION share_article_url_changed()""",
]
DROPS = [("share_article_url_changed", "articles"), ("share_story_lead_changed", "story_clusters"),
         ("share_link_deleted", "share_links"), ("share_link_changed", "share_links")]  # fmt: skip


def upgrade() -> None:
    op.create_table(
        "share_link_evictions",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("code", sa.String(length=16), nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_share_link_evictions")),
    )
    for statement in FUNCTIONS + TRIGGERS:
        op.execute(statement)


def downgrade() -> None:
    for trigger, table in DROPS:
        op.execute(f"DROP TRIGGER {trigger} ON {table}")
    for function in ("share_article_url_changed", "share_story_lead_changed", "share_link_changed"):
        op.execute(f"DROP FUNCTION {function}()")
    op.drop_table("share_link_evictions")
