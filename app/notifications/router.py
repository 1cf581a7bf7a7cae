"""The live `notificationAdded` subscriptions of one process, routed by reader. The fan-out's announcements on Redis
wake only the subscriptions of the readers they name; while Redis is away ONE poll loop reads the new notifications
of every reader subscribed here in one statement (every POLL_SECONDS, jittered, and once more after Redis returns:
what was announced in between never arrives) and hands each subscription its reader's own. How often the table is
read depends on time, not on how many subscriptions a process holds; PostgreSQL going away costs latency, not
notifications."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.notifications import inbox
from app.notifications.live import NOTIFICATION_ADDED
from app.notifications.models import Notification
from app.notifications.subscription import Subscription
from app.realtime.broadcast import Broadcaster
from app.resilience.outage import FAILURES, DatabaseOutage
from app.resilience.stopping import stop_if_told

log = logging.getLogger(__name__)

POLL_SECONDS = 2.0  # how often the table is read while Redis is away (jittered by a quarter either way)
LATE = timedelta(seconds=30)  # a batch committed this long after its rows got their ids is still found
PAGE = 200  # notifications read at once


class NotificationRouter:
    def __init__(self, db: async_sessionmaker[AsyncSession], broadcaster: Broadcaster, *,
                 poll_seconds: float = POLL_SECONDS) -> None:  # fmt: skip
        self._db = db
        self._broadcaster = broadcaster
        self._poll_seconds = poll_seconds
        self._readers: dict[int, set[Subscription]] = {}  # reader id -> their subscriptions here
        self._started = asyncio.Lock()
        self._announcements: contextlib.AsyncExitStack | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.database = DatabaseOutage("notifications")

    @contextlib.asynccontextmanager
    async def attach(self, subscription: Subscription) -> AsyncIterator[None]:
        """Routes to `subscription` from the moment this is entered: a notification written meanwhile is not missed."""
        self._readers.setdefault(subscription.user_id, set()).add(subscription)
        try:
            await self._start()
            yield
        finally:
            mine = self._readers.get(subscription.user_id, set())
            mine.discard(subscription)
            if not mine:
                self._readers.pop(subscription.user_id, None)

    def subscriptions(self) -> int:
        """How many subscriptions here know where they start (an announcement from then on reaches them)."""
        return sum(s.opened for mine in self._readers.values() for s in mine)

    async def start_of(self, user_id: int, after: int | None, *, keep: int) -> int:
        """Where a subscription starts (inbox.resume_point), waiting out an outage of PostgreSQL."""

        async def read() -> int:
            async with self._db() as session:
                return await inbox.resume_point(session, user_id, after, keep=keep)

        return await self.database.retried(read)

    async def _start(self) -> None:
        async with self._started:
            if self._announcements is None:
                stack = contextlib.AsyncExitStack()
                queue = await stack.enter_async_context(self._broadcaster.listen(NOTIFICATION_ADDED))
                self._announcements = stack
                self._tasks = [asyncio.create_task(self._wake(queue), name="notifications-wake"),
                               asyncio.create_task(self._poll(), name="notifications-poll")]  # fmt: skip

    async def _wake(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        """Forever: each announcement wakes the subscriptions of the readers it names."""
        while True:
            announcement = await queue.get()
            user_ids = announcement.get("user_ids") if isinstance(announcement, dict) else None
            for user_id in user_ids if isinstance(user_ids, list) else ():
                for subscription in self._readers.get(user_id, ()) if isinstance(user_id, int) else ():
                    subscription.wake()

    async def _poll(self) -> None:
        """Forever: while Redis is away (and once after each reconnect), one read for every reader here."""
        reconnects = self._broadcaster.reconnects
        while True:
            await asyncio.sleep(self._poll_seconds * random.uniform(0.75, 1.25))
            now = self._broadcaster.reconnects
            if not self._broadcaster.connected or now != reconnects:
                subscriptions = [s for mine in self._readers.values() for s in mine if s.opened]
                if not subscriptions or await self._read_every(subscriptions):
                    reconnects = now  # a failed read is tried again at the next tick, Redis back or not

    async def _read_every(self, subscriptions: list[Subscription]) -> bool:
        """False when PostgreSQL could not be reached (the outage noted once) or the read failed otherwise (a bug,
        logged: the loop goes on, the next outage of Redis is polled for too)."""
        try:
            await self._read(subscriptions)
        except Exception as error:
            stop_if_told(error)
            if not (isinstance(error, FAILURES) and self.database.noted(error)):
                log.exception("notifications: reading every reader's new notifications failed")
            return False
        self.database.ended()
        return True

    async def catch_up(self, subscription: Subscription) -> None:
        """Reads the table for one subscription (woken, or resuming), waiting out an outage of PostgreSQL."""
        subscription.due = False
        await self.database.retried(lambda: self._read([subscription]))

    async def _read(self, subscriptions: list[Subscription]) -> None:
        """Hands each subscription its reader's notifications after its cursor, page after page while pages come
        full of news: one statement a page, whatever the number of readers. A subscription holding a page not yet
        delivered reads on itself once it has (a slow client does not fill the process's memory)."""
        read_at, since = datetime.now(UTC), min(s.since for s in subscriptions) - LATE
        while subscriptions:
            afters: dict[int, int] = {}
            for s in subscriptions:
                afters[s.user_id] = min(s.cursor, afters.get(s.user_id, s.cursor))
            async with self._db() as session:
                rows = await inbox.newer(session, afters, since=since, limit=PAGE)
            by_reader: dict[int, list[Notification]] = {}
            for row in rows:
                by_reader.setdefault(row.user_id, []).append(row)
            fresh = [s.take(by_reader.get(s.user_id, [])) for s in subscriptions]
            if len(rows) < PAGE or not any(fresh):
                break
            for s in (behind := [s for s in subscriptions if s.backlog() >= PAGE]):
                s.due = True
            subscriptions = [s for s in subscriptions if s not in behind]
        for s in subscriptions:
            s.since = max(s.since, read_at)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._announcements is not None:
            await self._announcements.aclose()
