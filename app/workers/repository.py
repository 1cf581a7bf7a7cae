"""Every query on the workers table."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, insert, select, update

from app.db.engine import Executor
from app.workers.models import Worker


async def beat(db: Executor, worker_id: str, *, host: str, pid: int) -> bool:
    """The worker's heartbeat, stamped by the database's clock; True when its row had to be written anew (its first
    beat, or the sweeper had let it go)."""
    renewed = await db.scalar(
        update(Worker).where(Worker.id == worker_id).values(heartbeat_at=func.now()).returning(Worker.id)
    )
    if renewed is None:
        await db.execute(insert(Worker).values(id=worker_id, host=host, pid=pid))
    return renewed is None


async def leave(db: Executor, worker_id: str) -> None:
    """A worker that stops cleanly says so: its claims return at the next crawl tick."""
    await db.execute(delete(Worker).where(Worker.id == worker_id))


@dataclass(frozen=True, slots=True)
class GoneWorker:
    id: str
    heartbeat_at: datetime


async def let_go(db: Executor, *, silent_for: timedelta) -> list[GoneWorker]:
    """Workers whose heartbeat is older than `silent_for`, deleted."""
    rows = await db.execute(
        delete(Worker).where(Worker.heartbeat_at < func.now() - silent_for).returning(Worker.id, Worker.heartbeat_at)
    )
    return [GoneWorker(row.id, row.heartbeat_at) for row in rows]


async def beating_on(db: Executor, host: str, *, within: timedelta) -> int:
    """Workers of `host` whose heartbeat is younger than `within` (a container's healthcheck asks of its own)."""
    found = await db.scalar(
        select(func.count()).select_from(Worker).where(Worker.host == host, Worker.heartbeat_at >= func.now() - within)
    )
    return int(found or 0)
