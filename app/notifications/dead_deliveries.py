"""Dead deliveries for administrators: a page of them, oldest first, each with the log of its attempts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.db.engine import Executor
from app.notifications import delivery_repository as deliveries
from app.notifications.errors import AlertErrorCode, AlertRejected

MAX_ID_DIGITS = 18  # a bigint's worth


@dataclass(frozen=True)
class DeadDelivery:
    delivery: Any  # the deliveries row
    log: list[Any]  # its delivery_log rows, in order


def position(after_id: str | None) -> int | None:
    """The delivery id the page starts after; refused unless it is one (digits that fit a bigint)."""
    if after_id is None:
        return None
    if not (after_id.isdigit() and len(after_id) <= MAX_ID_DIGITS):
        raise AlertRejected(AlertErrorCode.INVALID, "afterId: a delivery id from this list", "afterId")
    return int(after_id)


async def dead_page(db: Executor, after_id: str | None, limit: int) -> list[DeadDelivery]:
    """Up to `limit` dead deliveries after the one `after_id` names, each with its log."""
    rows = await deliveries.dead(db, after=position(after_id), limit=limit)
    logs: dict[int, list[Any]] = {row.id: [] for row in rows}
    for line in await deliveries.log_of(db, list(logs)):
        logs[line.delivery_id].append(line)
    return [DeadDelivery(row, logs[row.id]) for row in rows]
