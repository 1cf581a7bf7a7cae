"""A reader's new in-app notifications as they are written, each once. The fan-out's announcement on Redis only
wakes the subscription; the notifications table is the record it reads. So nothing written while Redis was away is
lost: the process's router (app/notifications/router.py) then reads the table for every subscription at once, and
once more after Redis returns (an announcement published during the outage never arrives). Nothing is lost to
PostgreSQL going away either: a read waits it out with back-off and goes on from the subscription's cursor. A
subscriber that reconnects itself passes the last notification it received and first gets those written since."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from app.notifications.models import Notification
from app.notifications.subscription import Subscription

if TYPE_CHECKING:
    from app.notifications.router import NotificationRouter

NOTIFICATION_ADDED = "notification.added"  # Redis pub/sub topic: {"event_id", "user_ids"}
CATCH_UP_MAX = 500  # notifications a resumed subscription first delivers at most (the newest; older: `notifications`)


async def new_notifications(router: NotificationRouter, user_id: int, *,
                            after: int | None = None) -> AsyncGenerator[Notification, None]:  # fmt: skip
    """The reader's notifications written from now on (with `after`, one of theirs: from that one on), in id order."""
    subscription = Subscription(user_id)
    async with router.attach(subscription):  # attached first: nothing written meanwhile is missed
        subscription.open(await router.start_of(user_id, after, keep=CATCH_UP_MAX), due=after is not None)
        while True:
            if subscription.due:
                await router.catch_up(subscription)
            for row in subscription.waiting():
                yield row
            await subscription.nudged()
