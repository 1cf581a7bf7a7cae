"""Databases of their own on a PostgreSQL server, for the tests and the benchmarks: created empty, dropped after."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine


@contextlib.asynccontextmanager
async def scratch_database(admin_url: str, prefix: str, *, keep: bool = False) -> AsyncIterator[str]:
    """A new, empty database (`<prefix>_<random>`) on the server of `admin_url` (an asyncpg URL of a database there);
    its URL. Dropped afterwards, connections and all, unless `keep`."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_async_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as connection:
            await connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield admin_url.rsplit("/", 1)[0] + f"/{name}"
        finally:
            if not keep:
                async with admin.connect() as connection:
                    await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await admin.dispose()
