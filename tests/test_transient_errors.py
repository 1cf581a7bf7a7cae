"""Which PostgreSQL failures are worth trying again soon (`transient`) and which fail the same way every time
(`refused_data`, or SQL PostgreSQL cannot run): each told from a real error raised by a real server, not a made-up
exception."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.resilience.outage import refused_data, transient, unreachable


async def _error_of(engine: AsyncEngine, *statements: str) -> SQLAlchemyError:
    try:
        async with engine.begin() as connection:
            for statement in statements:
                await connection.execute(text(statement))
    except SQLAlchemyError as error:
        return error
    raise AssertionError(f"no error from {statements}")


async def test_failures_for_the_moment_are_transient_and_refusals_and_bad_sql_are_not(database_url: str) -> None:
    engine = create_async_engine(database_url)
    holder = create_async_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE IF NOT EXISTS transient_probe (id int PRIMARY KEY)"))
            await connection.execute(text("INSERT INTO transient_probe VALUES (1) ON CONFLICT DO NOTHING"))
        # a lock timeout (55P03): a second transaction holds the row
        async with holder.begin() as held:
            await held.execute(text("SELECT * FROM transient_probe WHERE id = 1 FOR UPDATE"))
            lock_timeout = await _error_of(engine, "SET LOCAL lock_timeout = '50ms'",
                                           "SELECT * FROM transient_probe WHERE id = 1 FOR UPDATE")  # fmt: skip
        # a statement timeout (57014)
        cancelled = await _error_of(engine, "SET LOCAL statement_timeout = '50ms'", "SELECT pg_sleep(2)")
        # a serialization failure (40001), raised as PostgreSQL raises it
        serialization = await _error_of(engine, "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'serialization_failure'; "
                                                "END $$")  # fmt: skip
        deadlock = await _error_of(engine, "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'deadlock_detected'; END $$")
        division = await _error_of(engine, "SELECT 1 / 0")  # 22012
        duplicate = await _error_of(engine, "INSERT INTO transient_probe VALUES (1)")  # 23505
        nul = await _error_of(engine, "SELECT convert_from('\\x00'::bytea, 'UTF8')")  # 22021
        syntax = await _error_of(engine, "SELEC 1")  # 42601: a bug in the SQL
        missing = await _error_of(engine, "SELECT * FROM no_such_table")  # 42P01
        async with engine.begin() as connection:
            await connection.execute(text("DROP TABLE transient_probe"))
    finally:
        await engine.dispose()
        await holder.dispose()

    judged = {
        str(getattr(error.orig, "sqlstate", None)): (transient(error), refused_data(error), unreachable(error))
        for error in (lock_timeout, cancelled, serialization, deadlock, division, duplicate, nul, syntax, missing)
    }
    moment, refused, bug = (True, False, False), (False, True, False), (False, False, False)
    assert judged == {"55P03": moment, "57014": moment, "40001": moment, "40P01": moment,
                      "22012": refused, "23505": refused, "22021": refused, "42601": bug, "42P01": bug}  # fmt: skip


async def test_postgresql_unreachable_is_transient() -> None:
    engine = create_async_engine("postgresql+asyncpg://postgres@127.0.0.1:1/none", connect_args={"timeout": 2})
    try:
        with pytest.raises((SQLAlchemyError, OSError)) as caught:
            async with engine.connect():
                pass
    finally:
        await engine.dispose()
    assert unreachable(caught.value)
    assert transient(caught.value)
    assert not transient(ValueError("a bug"))
    assert not transient(asyncio.CancelledError())
