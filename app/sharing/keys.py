"""The key that signs share codes, read from PostgreSQL once per process and database: it never changes (deleting it
breaks every link issued), so neither a new link nor a visit asks for it again."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.sharing import codes
from app.sharing import repository as links


class SigningKey:
    def __init__(self, db: async_sessionmaker[AsyncSession]) -> None:
        self._db = db
        self._key: bytes | None = None
        self._read = asyncio.Lock()  # the first visits at once read it once

    async def read(self) -> bytes:
        """The key, made on first use in a transaction of its own (committed before any code is signed with it)."""
        if self._key is not None:
            return self._key
        async with self._read:
            if self._key is None:
                async with self._db.begin() as session:
                    self._key = await links.signing_key(session, codes.new_key())
            return self._key
