"""The text-search index over the last days' articles (app/search/recent.py): built for the day, replaced the next,
left alone while another worker holds the lock, and used by the planner for the windows it covers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from app.search.recent import LOCK_KEY, RECENT_DAYS, cutoff, index_name, keep_recent_index, recent_indexes
from app.services import Services
from app.settings import Settings
from tests.newsroom import StorySpec, add_source, add_story

NOW = datetime(2026, 11, 21, 15, 30, tzinfo=UTC)


@pytest.fixture(autouse=True)
async def no_recent_index(services: Services) -> AsyncIterator[None]:
    """Indexes outlive the tables' truncation between tests: each test starts and ends without one."""

    async def drop() -> None:
        async with services.engine.begin() as connection:
            for name in await recent_indexes(connection):
                await connection.execute(text(f"DROP INDEX {name}"))

    await drop()
    yield
    await drop()


async def present(services: Services) -> dict[str, bool]:
    async with services.engine.connect() as connection:
        return await recent_indexes(connection)


async def predicate(services: Services, name: str) -> str:
    async with services.engine.connect() as connection:
        found: str = await connection.scalar(
            text("SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indexrelid = CAST(:name AS regclass)"),
            {"name": name},
        )
    return found


async def test_the_day_s_index_is_built_once_and_replaces_the_previous_day_s(services: Services) -> None:
    assert cutoff(NOW) == datetime(2026, 11, 13, tzinfo=UTC)  # the start of the day, RECENT_DAYS before
    assert await keep_recent_index(services.engine, NOW) == "ix_articles_search_since_20261113"
    assert await present(services) == {"ix_articles_search_since_20261113": True}
    assert "2026-11-13 00:00:00+00" in await predicate(services, "ix_articles_search_since_20261113")
    assert await keep_recent_index(services.engine, NOW + timedelta(hours=8)) is None  # the same day: nothing to do
    later = NOW + timedelta(days=1)
    assert await keep_recent_index(services.engine, later) == index_name(cutoff(later))
    assert await present(services) == {"ix_articles_search_since_20261114": True}  # the older one dropped


async def test_a_build_that_was_cut_off_is_dropped_and_built_again(services: Services) -> None:
    name = index_name(cutoff(NOW))
    await keep_recent_index(services.engine, NOW)
    async with services.engine.begin() as connection:  # what an interrupted CREATE INDEX CONCURRENTLY leaves
        await connection.execute(text("UPDATE pg_index SET indisvalid = false WHERE indexrelid = CAST(:n AS regclass)"),
                                 {"n": name})  # fmt: skip
    assert await present(services) == {name: False}
    assert await keep_recent_index(services.engine, NOW) == name
    assert await present(services) == {name: True}


async def test_while_another_worker_holds_the_lock_nothing_is_built(services: Services) -> None:
    async with services.engine.connect() as other:
        await other.execution_options(isolation_level="AUTOCOMMIT")
        await other.execute(text("SELECT pg_advisory_lock(:key)"), {"key": LOCK_KEY})
        assert await keep_recent_index(services.engine, NOW) is None
        await other.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})
    assert await present(services) == {}
    assert await keep_recent_index(services.engine, NOW) is not None


async def test_the_planner_reads_the_recent_index_for_the_windows_it_covers(services: Services,
                                                                             settings: Settings) -> None:  # fmt: skip
    outlet = await add_source(services, settings, "wire")
    for age in (timedelta(hours=2), timedelta(days=20)):
        await add_story(services, StorySpec("Harbour strike goes on", [outlet], age=age))
    now = datetime.now(UTC)
    name = await keep_recent_index(services.engine, now)
    assert name is not None

    async def plan(since: datetime) -> str:
        """The plan with the two text-search indexes to choose from: on a table this small the date index or
        reading it whole would win, so both are ruled out (the index dropped in a transaction rolled back)."""
        async with services.engine.connect() as connection, connection.begin() as transaction:
            await connection.execute(text("SET LOCAL enable_seqscan = off"))
            await connection.execute(text("DROP INDEX ix_articles_published_id"))
            rows = await connection.execute(
                text("EXPLAIN SELECT id FROM articles WHERE search_vector @@ CAST('harbour' AS tsquery) "
                     "AND published_at >= :since"), {"since": since})  # fmt: skip
            await transaction.rollback()
            return "\n".join(row[0] for row in rows)

    assert name in await plan(now - timedelta(days=1))
    assert name in await plan(now - timedelta(days=7))  # the week's window too
    assert name not in await plan(now - timedelta(days=RECENT_DAYS + 1))  # older than it holds: the full index
