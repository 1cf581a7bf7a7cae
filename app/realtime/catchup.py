"""What one process delivered of each topic, so that after a Redis outage it can deliver what it missed, once.

PostgreSQL's outbox is the record of every pushed event: pub/sub only carries them fast. A process remembers, per
topic, the newest outbox id it delivered and the ids of its recent deliveries; after reconnecting it reads from the
outbox what it may have missed (app/outbox/repository.py `events_missed`) and delivers those it has not seen, in id
order, before anything newer from pub/sub. An event that then arrives by pub/sub as well is recognised and skipped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from app.outbox import repository as outbox

RECALLED = 4096  # ids remembered per topic: far more than one catch-up window carries

# (topic, after this outbox id, delivered or written since) -> the missed events, oldest first, with their "event_id"
MissedEvents = Callable[[str, int | None, datetime], Awaitable[list[dict[str, Any]]]]


class Recent:
    """The last RECALLED ids added, as a set."""

    def __init__(self) -> None:
        self._order: deque[int] = deque()
        self._ids: set[int] = set()

    def __contains__(self, event_id: int) -> bool:
        return event_id in self._ids

    def add(self, event_id: int) -> None:
        self._order.append(event_id)
        self._ids.add(event_id)
        if len(self._order) > RECALLED:
            self._ids.discard(self._order.popleft())


class Delivered:
    """The outbox ids one process has delivered, per topic: the newest, the recent ones that came by pub/sub and the
    recent ones that came from a catch-up. An event of the first kind is skipped by a catch-up; one of the second,
    when pub/sub brings it after all. Nothing else is ever skipped: with Redis up, events pass as they come."""

    def __init__(self) -> None:
        self._newest: dict[str, int] = {}
        self._live: dict[str, Recent] = {}
        self._caught_up: dict[str, Recent] = {}

    def newest(self, topic: str) -> int | None:
        return self._newest.get(topic)

    def live(self, topic: str, event: object) -> bool:
        """Records `event`, which came by pub/sub; False when a catch-up delivered it already."""
        event_id = _id_of(event)
        if event_id is None:
            return True  # not an outbox event: nothing to recognise it by
        if event_id in self._caught_up.setdefault(topic, Recent()):
            return False
        self._live.setdefault(topic, Recent()).add(event_id)
        self._newest[topic] = max(event_id, self._newest.get(topic, event_id))
        return True

    def missed(self, topic: str, event: object) -> bool:
        """Records `event`, read from the outbox by a catch-up; False when it was delivered already."""
        event_id = _id_of(event)
        if event_id is None or event_id in self._live.get(topic, ()) or event_id in self._caught_up.get(topic, ()):
            return False
        self._caught_up.setdefault(topic, Recent()).add(event_id)
        self._newest[topic] = max(event_id, self._newest.get(topic, event_id))
        return True


def _id_of(event: object) -> int | None:
    event_id = event.get("event_id") if isinstance(event, dict) else None
    return event_id if isinstance(event_id, int) else None


CATCH_UP_LIMIT = 1000  # events per topic one catch-up delivers at most (a subscriber's buffer holds fewer)


async def read_missed(db: AsyncEngine, topic: str, after: int | None, since: datetime) -> list[dict[str, Any]]:
    """MissedEvents from the outbox, shaped as the relay publishes them."""
    async with db.connect() as connection:
        rows = await outbox.events_missed(connection, topic, after=after, since=since, limit=CATCH_UP_LIMIT)
    return [{**row.payload, "event_id": row.id} for row in rows]
