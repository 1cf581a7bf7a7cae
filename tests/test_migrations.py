"""The migrations are the schema: they match the models, and go down and up again cleanly."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.migrate import downgrade, upgrade
from app.models import Base


async def _diff(engine: AsyncEngine) -> list[object]:
    async with engine.connect() as connection:
        return await connection.run_sync(
            lambda sync: compare_metadata(MigrationContext.configure(sync, opts={"compare_type": True}), Base.metadata)
        )


async def _tables(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as connection:
        rows = await connection.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
        return {row[0] for row in rows}


async def test_upgrade_builds_exactly_the_models(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine)
    assert await _diff(scratch_engine) == []
    expected = {"sources", "crawl_schedule", "fetch_log", "articles", "story_clusters", "users", "api_keys",
                "topic_follows", "source_follows", "source_mutes", "read_events", "user_interest",
                "outbox"}  # fmt: skip
    assert expected <= await _tables(scratch_engine)


async def test_downgrade_then_upgrade_round_trips(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine)
    await downgrade(scratch_engine, "base")
    assert await _tables(scratch_engine) == {"alembic_version"}
    async with scratch_engine.connect() as connection:
        enums = await connection.scalar(text("SELECT count(*) FROM pg_type WHERE typtype = 'e'"))
    assert enums == 0
    await upgrade(scratch_engine)
    assert await _diff(scratch_engine) == []


async def test_invariant_constraints_exist(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine)
    async with scratch_engine.connect() as connection:
        names = set((await connection.execute(text("SELECT conname FROM pg_constraint"))).scalars())
        indexes = set((await connection.execute(text("SELECT indexname FROM pg_indexes"))).scalars())
    assert {"uq_articles_url", "uq_articles_source_id_external_id", "uq_sources_feed_url",
            "uq_read_events_user_id_article_id_session_id_action", "uq_outbox_dedupe_key"} <= names  # fmt: skip
    assert {"ix_crawl_schedule_due", "uq_users_email_lower"} <= indexes


async def test_every_foreign_key_is_indexed(scratch_engine: AsyncEngine) -> None:
    """Deleting a referenced row (an article, a source, a story) looks its referrers up by index, never by a scan of
    their table: every foreign key column leads some index of its table."""
    await upgrade(scratch_engine)
    async with scratch_engine.connect() as connection:
        unindexed = (await connection.execute(text("""
            SELECT c.conrelid::regclass::text || '.' || a.attname
            FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
            WHERE c.contype = 'f' AND NOT EXISTS (
                SELECT FROM pg_index i WHERE i.indrelid = c.conrelid AND i.indkey[0] = c.conkey[1])
            ORDER BY 1"""))).scalars().all()  # fmt: skip
    assert unindexed == []
