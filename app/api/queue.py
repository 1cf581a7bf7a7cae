"""Enqueueing worker jobs from the API: one arq pool per process, opened on first use."""

from __future__ import annotations

import asyncio
from typing import Any

from arq.connections import ArqRedis, RedisSettings, create_pool

from app.settings import Settings


class JobQueue:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._pool: ArqRedis | None = None
        self._lock = asyncio.Lock()

    async def enqueue(self, job: str, *args: Any, **options: Any) -> None:
        async with self._lock:
            if self._pool is None:
                assert self._settings.redis_url
                self._pool = await create_pool(
                    RedisSettings.from_dsn(self._settings.redis_url), default_queue_name=self._settings.queue_name
                )
        await self._pool.enqueue_job(job, *args, _queue_name=self._settings.queue_name, **options)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
