"""Commands' database: DATABASE_URL, or an embedded PostgreSQL under NEWSAGG_HOME for the length of a command."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


@contextlib.contextmanager
def database(settings: Settings) -> Iterator[str]:
    """DATABASE_URL, or an embedded PostgreSQL under NEWSAGG_HOME for the length of the command."""
    if settings.database_url:
        yield settings.database_url
        return
    from app.runtime.supervisor import embedded_servers, home_lock

    with home_lock(settings.home), embedded_servers(settings.model_copy(update={"redis_url": "unused"})) as embedded:
        yield embedded.urls["DATABASE_URL"]


def migrate(settings: Settings, revision: str, *, first_start: bool = False) -> int:
    from app.db.migrate import upgrade_sync

    if first_start:
        return with_database(settings, lambda engine: _first_start(engine, settings))  # migrates to head first
    with database(settings) as url:
        upgrade_sync(url, revision)
    return 0


async def _first_start(engine: AsyncEngine, settings: Settings) -> int:
    from app.db.engine import session_factory
    from app.runtime.first_start import first_start

    async with session_factory(engine).begin() as session:
        await first_start(session, settings)
    return 0


def with_database(settings: Settings, work: Callable[[AsyncEngine], Awaitable[int]]) -> int:
    """Runs `work` on the migrated database (DATABASE_URL, or an embedded one for the length of the command)."""
    from app.db.migrate import upgrade_sync

    with database(settings) as url:
        upgrade_sync(url)
        return with_engine(settings.model_copy(update={"database_url": url}), work)


def with_engine(settings: Settings, work: Callable[[AsyncEngine], Awaitable[int]]) -> int:
    """Runs `work` on DATABASE_URL as it is: no migration, no embedded server."""
    import asyncio

    from app.db.engine import create_engine

    async def run() -> int:
        engine = create_engine(settings)
        try:
            return await work(engine)
        finally:
            await engine.dispose()

    return asyncio.run(run())
