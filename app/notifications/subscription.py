"""One live `notificationAdded` subscription as the process's router sees it: whose it is, how far it has delivered,
and the notifications waiting to go out, each once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from app.notifications.models import Notification
from app.realtime.catchup import Recent


class Subscription:
    """Notifications reach it from two sides, its own reads of the table and the router's poll for every reader,
    and leave it once each, in the order they came. Until it knows where it starts (`open`) it takes none: the
    router's poll reads them again from its cursor."""

    def __init__(self, user_id: int) -> None:
        self.user_id = user_id
        self.start = self.cursor = 0  # it delivers only notifications after `start`; `cursor`: the newest it has
        self.since = datetime.now(UTC)  # its reader's notifications were last read then
        self.due = False  # an announcement named its reader: it reads the table
        self.opened = False
        self._seen = Recent()
        self._waiting: list[Notification] = []
        self._nudged = asyncio.Event()

    def open(self, start: int, *, due: bool) -> None:
        self.start = self.cursor = start
        self.opened, self.due = True, self.due or due

    def take(self, rows: list[Notification]) -> bool:
        """Queues those of `rows` (its reader's) that it has not delivered yet; whether there were any."""
        if not self.opened:
            return False
        fresh = [row for row in rows if row.id > self.start and row.id not in self._seen]
        for row in fresh:
            self._seen.add(row.id)
            self.cursor = max(self.cursor, row.id)
        self._waiting.extend(fresh)
        if fresh:
            self._nudged.set()
        return bool(fresh)

    def wake(self) -> None:
        self.due = True
        self._nudged.set()

    def backlog(self) -> int:
        return len(self._waiting)

    def waiting(self) -> list[Notification]:
        """What is to be delivered now, handed over once."""
        waiting, self._waiting = self._waiting, []
        return waiting

    async def nudged(self) -> None:
        """Until something was taken or it was woken (at once if that happened since the last call)."""
        await self._nudged.wait()
        self._nudged.clear()
