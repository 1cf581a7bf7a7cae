"""A database migrated by migration 0010 as it was first released, brought to what 0010 makes now.

0010 was changed after its release (a vocabulary of title words, `search_terms`, replaced a trigram index on titles),
so a database the released 0010 migrated is stamped 0010 without what 0011 and the index sync need. Its 0010 objects
are dropped and the current 0010 runs again, so that there is one copy of what 0010 makes: the migration itself.
"""

from __future__ import annotations

import logging

from alembic.migration import MigrationContext
from alembic.operations import Operations
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection

log = logging.getLogger(__name__)

REVISION = "0010"
HELD_RETRY_AT = "retry_at_released"  # outbox.retry_at while 0010 adds it again: a held-back event stays held back

# What the released 0010 made, in an order its dependencies allow. The search vector becomes a plain column (its
# values kept) that no longer depends on the functions; 0010 drops it with its index and generates it again.
RELEASED = (
    *(f"DROP TRIGGER articles_search_{operation} ON articles" for operation in ("insert", "update", "delete")),
    "DROP FUNCTION newsagg_articles_to_search()",
    f"ALTER TABLE outbox RENAME COLUMN retry_at TO {HELD_RETRY_AT}",
    "DROP INDEX ix_articles_title_trgm",
    "DROP FUNCTION newsagg_unaccent(text)",
    "ALTER TABLE articles ALTER COLUMN search_vector DROP EXPRESSION",
    "DROP FUNCTION newsagg_search_vector(text, text, text)",
    "DROP FUNCTION newsagg_search_text(text)",
    "DROP FUNCTION newsagg_ts_config(text)",
)
CONFIGS = text("SELECT cfgname FROM pg_ts_config WHERE cfgnamespace = CAST(current_schema() AS regnamespace) "
               "AND cfgname LIKE 'newsagg\\_%'")  # fmt: skip


def repair_released_0010(connection: Connection, scripts: ScriptDirectory) -> bool:
    """In the caller's transaction: a database at 0010 without `search_terms` (what the released 0010 left) is given
    what the current 0010 makes, keeping its articles and outbox; any other database is left as it is (False)."""
    if _revision(connection) != REVISION or connection.scalar(text("SELECT to_regclass('search_terms')")):
        return False
    _drop_released(connection)
    context = MigrationContext.configure(connection)
    migration = scripts.get_revision(REVISION)
    assert migration is not None
    with Operations.context(context):
        migration.module.upgrade()
    connection.execute(text(f"UPDATE outbox SET retry_at = {HELD_RETRY_AT} WHERE {HELD_RETRY_AT} IS NOT NULL"))
    connection.execute(text(f"ALTER TABLE outbox DROP COLUMN {HELD_RETRY_AT}"))
    log.warning("database migrated by %s as first released (no search_terms table): brought to the current %s",
                REVISION, REVISION)  # fmt: skip
    return True


def _revision(connection: Connection) -> str | None:
    """The revision the database is stamped with, read without an Alembic context (whose configuration logs what it
    assumes: the migration about to run would log it again)."""
    if not connection.scalar(text("SELECT to_regclass('alembic_version')")):
        return None
    revision: str | None = connection.scalar(text("SELECT version_num FROM alembic_version"))
    return revision


def _drop_released(connection: Connection) -> None:
    for statement in RELEASED:
        connection.execute(text(statement))
    for config in connection.scalars(CONFIGS).all():
        connection.execute(text(f"DROP TEXT SEARCH CONFIGURATION {config}"))
