"""Async engine and session factory; one transaction per request or job, committed at the edge."""

from __future__ import annotations

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
