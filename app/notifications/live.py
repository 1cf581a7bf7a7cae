"""A reader's new in-app notifications as they are written, each once. The fan-out's announcement on Redis only
wakes the subscriber; the notifications table is the record it reads. So nothing written while Redis was away is
lost: while the process's pub/sub reader is disconnected the table is read every POLL_SECONDS, and once more after
each reconnect (an announcement published during the outage never arrives). A subscriber that reconnects itself
passes the last notification it received and first gets those written since."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.notifications import inbox
from app.notifications.models import Notification
from app.realtime.broadcast import Broadcaster
from app.realtime.catchup import Recent

NOTIFICATION_ADDED = "notification.added"  # Redis pub/sub topic: {"event_id", "user_ids"}
POLL_SECONDS = 2.0  # how often the table is read while Redis is away
LATE = timedelta(seconds=30)  # a batch committed this long after its rows got their ids is still found
PAGE = 200  # notifications read at once
CATCH_UP_MAX = 500  # notifications a resumed subscription first delivers at most (the newest; older: `notifications`)


async def new_notifications(db: async_sessionmaker[AsyncSession], broadcaster: Broadcaster, user_id: int, *,
                            after: int | None = None) -> AsyncIterator[Notification]:  # fmt: skip
    """The reader's notifications written from now on (with `after`, one of theirs: from that one on), in id order."""
    async with broadcaster.listen(NOTIFICATION_ADDED) as queue:  # attached first: nothing written meanwhile is missed
        async with db() as session:
            cursor = await inbox.resume_point(session, user_id, after, keep=CATCH_UP_MAX)
        start, seen, since, reconnects = cursor, Recent(), datetime.now(UTC), broadcaster.reconnects
        due = after is not None
        while True:
            if due:
                read_at = datetime.now(UTC)
            while due:  # page after page while pages come full of news
                async with db() as session:
                    rows = await inbox.newer(session, user_id, after=cursor, since=since - LATE, limit=PAGE)
                fresh = [row for row in rows if row.id > start and row.id not in seen]
                for row in fresh:
                    seen.add(row.id)
                    cursor = max(cursor, row.id)
                    yield row
                due = len(rows) == PAGE and bool(fresh)
                since = read_at
            due = await _woken(queue, broadcaster, user_id, reconnects)
            reconnects = broadcaster.reconnects


async def _woken(queue: asyncio.Queue[dict[str, object]], broadcaster: Broadcaster, user_id: int,
                 reconnects: int) -> bool:  # fmt: skip
    """After an announcement or POLL_SECONDS: whether the table should be read now."""
    event: dict[str, object] | None = None
    with contextlib.suppress(TimeoutError):
        event = await asyncio.wait_for(queue.get(), POLL_SECONDS)
    if event is not None:
        user_ids = event.get("user_ids")
        return isinstance(user_ids, list) and user_id in user_ids
    return not broadcaster.connected or broadcaster.reconnects != reconnects
