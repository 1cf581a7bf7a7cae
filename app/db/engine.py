"""Async engine and session factory; one transaction per request or job, committed at the edge."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from app.settings import Settings

# What a repository function runs on: an ORM session (requests, services) or a bare connection (hot paths such
# as ingest, where the ORM's identity map and flush machinery would only cost time).
Executor = AsyncSession | AsyncConnection


class DatabaseNotConfigured(RuntimeError):
    """No DATABASE_URL and no embedded server started for this process."""


def create_engine(settings: Settings, *, pre_ping: bool = True) -> AsyncEngine:
    """`pre_ping` checks each connection at checkout (one round trip): worth it for API requests; the worker's
    hot path goes without, relying on SQLAlchemy invalidating the pool at the first disconnect error."""
    if not settings.database_url:
        raise DatabaseNotConfigured(
            "DATABASE_URL is not set: run `newsagg up` (starts embedded PostgreSQL) or set DATABASE_URL"
        )
    return create_async_engine(
        settings.database_url,
        pool_size=settings.database_pool_size,
        pool_pre_ping=pre_ping,
    )


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


@contextlib.asynccontextmanager
async def begin_with(db: AsyncEngine, statement: str) -> AsyncIterator[AsyncConnection]:
    """A transaction whose BEGIN travels with its first statement (`statement`: SQL without parameters or results,
    such as taking a lock): one round trip, where the driver sends BEGIN on its own first. Statements on the
    connection run inside it; it commits when the block ends, and rolls back if the block raises. A connection
    whose rollback fails is discarded, never pooled mid-transaction."""
    async with db.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")  # the driver then sends no BEGIN itself
        driver = (await connection.get_raw_connection()).driver_connection
        assert driver is not None
        try:
            await driver.execute(f"BEGIN; {statement}")  # the simple protocol carries several statements
            yield connection
        except BaseException:
            with contextlib.suppress(Exception):
                await driver.execute("ROLLBACK")
            raise
        else:
            await driver.execute("COMMIT")
        finally:
            if driver.is_in_transaction():  # a rollback or commit that never arrived
                await connection.invalidate()
