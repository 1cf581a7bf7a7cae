"""A worker's heartbeat: its row in the workers table, renewed every few seconds on a connection of its own (jobs
that fill the pool, or wait for a lock, must not make a living worker look dead)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket

from sqlalchemy.ext.asyncio import create_async_engine

from app.resilience.stopping import stop_if_told
from app.settings import Settings
from app.workers import repository
from app.workers.metrics import HEARTBEAT_FAILURES

log = logging.getLogger(__name__)


class Heartbeat:
    def __init__(self, settings: Settings, role: str = "worker") -> None:
        self.role = role  # as its logs name it: worker (crawling), article worker
        self.host, self.pid = socket.gethostname()[:80], os.getpid()
        self.worker_id = f"{self.host}:{self.pid}:{secrets.token_hex(3)}"  # a restarted process is another worker
        assert settings.database_url
        self._engine = create_async_engine(settings.database_url, pool_size=1, max_overflow=0)
        self._every = settings.worker_heartbeat_seconds
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Beats once before the worker takes any job (claims name a worker the database knows), then keeps on."""
        await self._beat(first=True)
        self._task = asyncio.create_task(self._keep_beating(), name=f"heartbeat {self.worker_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            async with self._engine.begin() as connection:
                await repository.leave(connection, self.worker_id)
        except Exception:  # its claims then return once its heartbeat has aged instead
            log.warning("worker %s could not sign off", self.worker_id, exc_info=True)
        await self._engine.dispose()

    async def _keep_beating(self) -> None:
        while True:
            await asyncio.sleep(self._every)
            await self._beat(first=False)

    async def _beat(self, *, first: bool) -> None:
        try:
            async with self._engine.begin() as connection:
                anew = await repository.beat(connection, self.worker_id, host=self.host, pid=self.pid)
        except Exception as error:  # PostgreSQL away: beat again next time (if it stays away, so does every claim's
            stop_if_told(error)  # writer); unless the stop cut the beat off
            HEARTBEAT_FAILURES.inc()
            log.warning("worker %s: heartbeat failed", self.worker_id, exc_info=True)
            return
        if first:
            log.info("%s %s started", self.role, self.worker_id)
        elif anew:
            log.warning("worker %s was presumed gone (no heartbeat for too long); it beats again", self.worker_id)
