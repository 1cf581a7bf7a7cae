"""Async engine and session factory; one transaction per request or job, committed at the edge."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from app.settings import Settings


class DatabaseNotConfigured(RuntimeError):
    """No DATABASE_URL and no embedded server started for this process."""


def create_engine(settings: Settings) -> AsyncEngine:
    if not settings.database_url:
        raise DatabaseNotConfigured(
            "DATABASE_URL is not set: run `newsagg up` (starts embedded PostgreSQL) or set DATABASE_URL"
        )
    return create_async_engine(
        settings.database_url,
        pool_size=settings.database_pool_size,
        pool_pre_ping=True,
    )


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
