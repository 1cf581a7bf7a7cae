"""Run Alembic migrations programmatically (the only way the schema changes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db.repair import repair_released_0010

REPO_ROOT = Path(__file__).resolve().parents[2]


def alembic_config() -> Config:
    config = Config(str(REPO_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    return config


def upgrade_sync(database_url: str, revision: str = "head") -> None:
    """From synchronous code (the CLI, the supervisor): on an engine and an event loop of its own."""

    async def run() -> None:
        engine = create_async_engine(database_url)
        try:
            await upgrade(engine, revision)
        finally:
            await engine.dispose()

    asyncio.run(run())


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """From async code (tests, the bench; `upgrade_sync` too): run on a connection of the caller's engine. A
    database the released 0010 migrated is first given what the current 0010 makes, in the same transaction
    (app/db/repair.py)."""

    def repair_then_upgrade(config: Config) -> None:
        repair_released_0010(config.attributes["connection"], ScriptDirectory.from_config(config))
        command.upgrade(config, revision)

    await _on_connection(engine, repair_then_upgrade)


async def downgrade(engine: AsyncEngine, revision: str = "base") -> None:
    await _on_connection(engine, lambda config: command.downgrade(config, revision))


async def _on_connection(engine: AsyncEngine, action: Callable[[Config], None]) -> None:
    def run(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        action(config)

    async with engine.begin() as connection:
        await connection.run_sync(run)
