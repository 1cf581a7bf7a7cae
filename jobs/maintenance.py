"""Shared by the pruning jobs: deleting old rows a batch per transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine


async def delete_in_batches(db: AsyncEngine, delete_batch: Callable[[AsyncConnection], Awaitable[int]]) -> int:
    """Runs `delete_batch` (which deletes one batch and says how many) in a transaction of its own each time, until it
    deletes nothing; returns how many were deleted in all."""
    deleted = 0
    while True:
        async with db.begin() as connection:
            batch = await delete_batch(connection)
        deleted += batch
        if batch == 0:
            return deleted
