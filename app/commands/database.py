"""Commands' database: DATABASE_URL, else that of the `newsagg up` running on NEWSAGG_HOME, else an embedded
PostgreSQL under NEWSAGG_HOME for the length of the command."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

STARTING_WAIT_S = 120.0  # how long a command waits for a `newsagg up` that is starting (initdb, migrations)


@contextlib.contextmanager
def database(settings: Settings) -> Iterator[str]:
    """DATABASE_URL, or the running `newsagg up`'s, or an embedded PostgreSQL for the length of the command."""
    if settings.database_url:
        yield settings.database_url
        return
    from app.runtime.supervisor import embedded_servers

    with contextlib.ExitStack() as stack:
        url = _running_or_locked(settings.home, stack)
        if url is None:
            embedded = stack.enter_context(embedded_servers(settings.model_copy(update={"redis_url": "unused"})))
            url = embedded.urls["DATABASE_URL"]
        yield url


def _running_or_locked(home: Path, stack: contextlib.ExitStack) -> str | None:
    """The database of the `newsagg up` holding `home`; else None, with `home` locked for this command."""
    from app.runtime.servers_file import RunningElsewhere, running_database_url
    from app.runtime.supervisor import HomeInUse, home_lock

    deadline = time.monotonic() + STARTING_WAIT_S
    while True:
        try:
            stack.enter_context(home_lock(home))
            return None
        except HomeInUse:
            if (url := running_database_url(home)) is not None:
                return url
        if time.monotonic() > deadline:
            raise RunningElsewhere(f"{home} is held by a `newsagg up` that has not finished starting, or by another "
                                   "command: try again when it is done")  # fmt: skip
        time.sleep(0.5)


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
