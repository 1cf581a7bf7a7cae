"""Enqueueing worker jobs from the API: one arq pool per process, opened on first use."""

from __future__ import annotations

from typing import Any

from arq.connections import ArqRedis

from app.redis_client import redis_of
from app.settings import Settings


class JobQueue:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._pool: ArqRedis | None = None

    async def enqueue(self, job: str, *args: Any, **options: Any) -> None:
        if self._pool is None:  # bounded calls (app/redis_client.py): a hung Redis fails the enqueue in time
            self._pool = redis_of(ArqRedis, self._settings)
        await self._pool.enqueue_job(job, *args, _queue_name=self._settings.queue_name, **options)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
