"""A database migrated by 0010 as first released reaches head with what the current 0010 makes, its articles and
outbox kept; any other database is left as it is."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db import migrate
from app.db.repair import repair_released_0010

# What 0010 made as released (7ea2995) where the current 0010 differs, made on a database the current 0010 migrated:
# the trigram index on titles instead of the vocabulary, the CJK bigrams and the vector as written then, the
# statistics target left at its default, and outbox events without 'inserted'.
RELEASED_VECTOR = """
    CREATE OR REPLACE FUNCTION newsagg_search_vector(language text, title text, summary text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
        SELECT setweight(to_tsvector('public.newsagg_simple', x.title), 'A')
            || setweight(to_tsvector('public.newsagg_simple', x.summary), 'B')
            || CASE WHEN x.config = 'public.newsagg_simple'::regconfig THEN ''::tsvector
                    ELSE setweight(to_tsvector(x.config, x.title), 'A')
                         || setweight(to_tsvector(x.config, x.summary), 'B') END
        FROM (SELECT public.newsagg_ts_config(language) AS config,
                     public.newsagg_search_text(coalesce(title, '')) AS title,
                     public.newsagg_search_text(coalesce(summary, '')) AS summary) AS x
    $$
"""
RELEASED = (
    "DROP TABLE search_terms",
    """CREATE FUNCTION public.newsagg_unaccent(body text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
       AS $$ SELECT public.unaccent('public.unaccent'::regdictionary, body) $$""",
    "CREATE INDEX ix_articles_title_trgm ON articles USING gin (public.newsagg_unaccent(lower(title)) gin_trgm_ops)",
    RELEASED_VECTOR,
    "ALTER TABLE articles ALTER COLUMN search_vector SET STATISTICS -1",
)
# (a function the current 0010 makes, a text in its definition, what the released 0010 had there)
RELEASED_FUNCTIONS = (
    ("newsagg_cjk_bigrams", "newsagg_cjk_bigrams(", "newsagg_search_text("),  # search_text was the PL/pgSQL
    ("newsagg_articles_to_search", ", 'inserted', TG_OP = 'INSERT'", ""),
)

SOURCE = """
    INSERT INTO sources (feed_url, name, kind, min_interval_s, max_interval_s, status)
    VALUES ('http://127.0.0.1:9/feed', 'Feed', 'rss', 300, 3600, 'active')
"""
ARTICLE = text("""
    INSERT INTO articles (source_id, external_id, url, title, summary, published_at, content_hash, language, topics)
    SELECT id, :title, 'https://news.example/' || md5(:title), :title, '', now(), 1, 'en', '{world}' FROM sources
    RETURNING id
""")

SCHEMA = {
    "tables": "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
    "functions": "SELECT pg_get_functiondef(oid) FROM pg_proc WHERE proname LIKE 'newsagg\\_%'",
    "configs": "SELECT cfgname FROM pg_ts_config WHERE cfgname LIKE 'newsagg\\_%'",
    "indexes": "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'",
    "triggers": "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal",
    "columns": """
        SELECT concat_ws(' ', c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                         a.attstattarget, pg_get_expr(d.adbin, d.adrelid))
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.relnamespace = CAST('public' AS regnamespace) AND c.relkind = 'r' AND a.attnum > 0
              AND NOT a.attisdropped
    """,
}


async def _schema(engine: AsyncEngine) -> dict[str, list[str]]:
    async with engine.connect() as connection:
        return {name: sorted(map(str, await connection.scalars(text(query)))) for name, query in SCHEMA.items()}


async def _released(engine: AsyncEngine) -> None:
    """A database as the released 0010 left it (articles and outbox events then included)."""
    await migrate.upgrade(engine, "0010")
    async with engine.begin() as connection:
        for function, current, released in RELEASED_FUNCTIONS:
            definition = await connection.scalar(text(f"SELECT pg_get_functiondef('{function}'::regproc)"))
            assert current in definition
            await connection.execute(text(definition.replace(current, released)))
        await connection.execute(text("DROP FUNCTION newsagg_cjk_bigrams(text)"))
        for statement in RELEASED:
            await connection.execute(text(statement))
        await connection.execute(text(SOURCE))
        for title in ("Floods hit Cornwall again", "Élection: Cornwall votes"):
            await connection.execute(ARTICLE, {"title": title})
        await connection.execute(text("UPDATE outbox SET retry_at = '2030-01-01' WHERE id = 1"))


async def _rows(engine: AsyncEngine, query: str) -> list[Any]:
    async with engine.connect() as connection:
        return list(await connection.execute(text(query)))


@pytest.mark.parametrize("entry", ["upgrade", "upgrade_sync"])
async def test_a_database_the_released_0010_migrated_is_repaired_on_its_way_to_head(
    scratch_engine: AsyncEngine, database_url: str, caplog: pytest.LogCaptureFixture, entry: str
) -> None:
    # given a database the released 0010 migrated, with two articles and their outbox events
    await _released(scratch_engine)
    outbox = await _rows(scratch_engine, "SELECT id, payload, retry_at FROM outbox ORDER BY id")
    assert [payload for _, payload, _ in outbox] == [{"articles": [1]}, {"articles": [2]}]
    # when it is upgraded (by the supervisor and the tests, or the CLI)
    with caplog.at_level(logging.WARNING, logger="app.db.repair"):
        if entry == "upgrade":
            await migrate.upgrade(scratch_engine)
        else:
            await asyncio.to_thread(migrate.upgrade_sync, scratch_engine.url.render_as_string(hide_password=False))
    # then it is at head with exactly the schema of a database migrated from scratch
    assert [r.getMessage() for r in caplog.records] == [
        "database migrated by 0010 as first released (no search_terms table): brought to the current 0010"
    ]
    fresh = create_async_engine(database_url)
    assert await _schema(scratch_engine) == await _schema(fresh)
    await fresh.dispose()
    head = ScriptDirectory.from_config(migrate.alembic_config()).get_current_head()
    assert await _rows(scratch_engine, "SELECT version_num FROM alembic_version") == [(head,)]
    # with the vocabulary of the titles present, its articles found by their words and its outbox as it was
    terms = await _rows(scratch_engine, "SELECT term, articles FROM search_terms")
    assert dict(terms) == {"floods": 1, "hit": 1, "cornwall": 2, "again": 1, "election": 1, "votes": 1}
    voting_in_world = "to_tsquery('newsagg_english', 'voting') && tsquery('''~topic:world''')"
    assert await _rows(scratch_engine, f"SELECT id FROM articles WHERE search_vector @@ ({voting_in_world})") == [(2,)]
    assert await _rows(scratch_engine, "SELECT id, payload, retry_at FROM outbox ORDER BY id") == outbox
    # and an article inserted now is announced as inserted (the index sync learns its title words)
    async with scratch_engine.begin() as connection:
        await connection.execute(ARTICLE, {"title": "Storm warning"})
    latest = await _rows(scratch_engine, "SELECT payload FROM outbox ORDER BY id DESC LIMIT 1")
    assert latest == [({"articles": [3], "inserted": True},)]


async def test_the_released_state_breaks_0011_without_the_repair(scratch_engine: AsyncEngine) -> None:
    await _released(scratch_engine)

    def upgrade_without_repair(connection: Any) -> None:
        config = migrate.alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, "head")

    async with scratch_engine.begin() as connection:
        with pytest.raises(ProgrammingError, match="ix_search_terms_trgm"):
            await connection.run_sync(upgrade_without_repair)


@pytest.mark.parametrize("revision", ["head", "0010", "0009", None])
async def test_any_other_database_is_left_alone(scratch_engine: AsyncEngine, revision: str | None) -> None:
    # given a database at head, one the current 0010 migrated, one at an earlier revision, and an empty one
    if revision:
        await migrate.upgrade(scratch_engine, revision)
    before = await _schema(scratch_engine)
    # when the repair looks at it
    scripts = ScriptDirectory.from_config(migrate.alembic_config())
    async with scratch_engine.begin() as connection:
        repaired = await connection.run_sync(repair_released_0010, scripts)
    # then it does nothing
    assert not repaired
    assert await _schema(scratch_engine) == before
