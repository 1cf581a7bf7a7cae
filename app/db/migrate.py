"""Run Alembic migrations programmatically (the only way the schema changes)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

REPO_ROOT = Path(__file__).resolve().parents[2]


def alembic_config(database_url: str | None = None) -> Config:
    config = Config(str(REPO_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    if database_url:
        config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade_sync(database_url: str, revision: str = "head") -> None:
    """From synchronous code (the CLI): Alembic runs its own event loop."""
    command.upgrade(alembic_config(database_url), revision)


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """From async code (tests, the supervisor): run on a connection of the caller's engine."""
    await _on_connection(engine, lambda config: command.upgrade(config, revision))


async def downgrade(engine: AsyncEngine, revision: str = "base") -> None:
    await _on_connection(engine, lambda config: command.downgrade(config, revision))


async def _on_connection(engine: AsyncEngine, action: object) -> None:
    def run(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        action(config)  # type: ignore[operator]

    async with engine.begin() as connection:
        await connection.run_sync(run)
