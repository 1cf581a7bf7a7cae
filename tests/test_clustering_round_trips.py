"""What a clustering batch costs in round trips to PostgreSQL, counted on the wire through a loopback relay; and the
transaction that begins with its lock leaves nothing behind when it fails."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db.engine import begin_with
from app.services import Services
from app.settings import Settings
from app.stories.service import cluster_articles
from app.stories.store import ClusteringCache
from tests.test_stories_ingest import APPLE, FED, stored

SPECIAL_STARTS = {80877103, 80877104}  # SSLRequest, GSSENCRequest: answered with one byte, then the startup follows


class RoundTrips:
    """A relay to PostgreSQL counting the client's round trips: each simple query ('Q') and each Sync ('S') ends a
    request the client then waits on."""

    def __init__(self, port: int) -> None:
        self.port, self.count = port, 0

    async def serve(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        server_in, server_out = await asyncio.open_connection("127.0.0.1", self.port)
        answers = asyncio.create_task(self._copy(server_in, client_out))  # the server's side, closed when it closes
        try:
            while True:
                length, code = struct.unpack("!ii", await client_in.readexactly(8))
                server_out.write(struct.pack("!ii", length, code) + await client_in.readexactly(length - 8))
                if code not in SPECIAL_STARTS:
                    break
            while True:
                kind, length = struct.unpack("!ci", await client_in.readexactly(5))
                server_out.write(struct.pack("!ci", kind, length) + await client_in.readexactly(length - 4))
                self.count += kind in (b"Q", b"S")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            server_out.close()
            await answers

    @staticmethod
    async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(65536):
                writer.write(chunk)
        writer.close()


@contextlib.asynccontextmanager
async def counted_engine(settings: Settings) -> AsyncIterator[tuple[AsyncEngine, RoundTrips]]:
    assert settings.database_url
    url = urlsplit(settings.database_url)
    trips = RoundTrips(url.port or 5432)
    relay = await asyncio.start_server(trips.serve, "127.0.0.1", 0)
    port = relay.sockets[0].getsockname()[1]
    engine = create_async_engine(url._replace(netloc=f"{url.username}@127.0.0.1:{port}").geturl(),
                                 connect_args={"ssl": False}, pool_size=1, max_overflow=0)  # fmt: skip
    try:
        yield engine, trips
    finally:
        await engine.dispose()
        relay.close()


async def test_a_batch_is_four_round_trips(services: Services, settings: Settings) -> None:
    """Beginning with the lock, the batch read with its story ids and revision (waiting articles taken along), the
    save, the commit: nothing else, once the worker's statements are prepared and nobody else wrote since its save."""
    first = await stored(services, settings, FED)
    cache = ClusteringCache()
    async with counted_engine(settings) as (engine, trips):
        await cluster_articles(engine, first, cache, pending=2000)
        waiting = await stored(services, settings, APPLE, start=10)
        asked, others = waiting[:1], waiting[1:]
        async with services.engine.begin() as connection:  # understood, as ingest leaves them: waiting for a story
            await connection.execute(text("UPDATE articles SET simhash = 1 WHERE id = ANY(:ids)"), {"ids": others})
        trips.count = 0
        placed = await cluster_articles(engine, asked, cache, pending=2000)
        assert trips.count == 4
    assert set(placed) == set(waiting)
    assert len(set(placed.values())) == 1  # one story for the three Apple articles


async def renamed_then_failed(engine: AsyncEngine, article: int) -> None:
    async with begin_with(engine, "SELECT 1") as connection:
        await connection.execute(text("UPDATE articles SET title = 'gone' WHERE id = :id"), {"id": article})
        raise ZeroDivisionError


async def test_a_failed_batch_rolls_back_and_pools_its_connection_clean(services: Services,
                                                                        settings: Settings) -> None:  # fmt: skip
    [article] = await stored(services, settings, FED[:1])
    async with counted_engine(settings) as (engine, _):
        with pytest.raises(ZeroDivisionError):
            await renamed_then_failed(engine, article)
        async with engine.connect() as connection:  # the pool's only connection
            driver = (await connection.get_raw_connection()).driver_connection
            assert driver is not None
            assert not driver.is_in_transaction()
            assert await connection.scalar(text("SELECT title FROM articles WHERE id = :id"), {"id": article}) == FED[0]
        async with begin_with(engine, "SELECT 1") as connection:
            await connection.execute(text("UPDATE articles SET title = 'kept' WHERE id = :id"), {"id": article})
    async with services.engine.connect() as connection:
        assert await connection.scalar(text("SELECT title FROM articles WHERE id = :id"), {"id": article}) == "kept"
