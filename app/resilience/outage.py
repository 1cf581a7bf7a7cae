"""PostgreSQL going away as the many long-lived loops of one process meet it: each retries with back-off, and the
outage is logged and counted once, however many of them fail at once."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.resilience.backoff import Backoff
from app.resilience.metrics import DATABASE_OUTAGES
from app.resilience.stopping import stop_if_told

log = logging.getLogger(__name__)

T = TypeVar("T")
FAILURES = (SQLAlchemyError, OSError, TimeoutError)  # what a read may raise; `unreachable` tells an outage from a bug
_DATABASE_GONE = ("08", "57P01", "57P02", "57P03")  # SQLSTATE: connection exception; shut down; cannot connect now


def unreachable(error: BaseException) -> bool:
    """Whether `error` says PostgreSQL could not be reached (refused, dropped, shutting down), not that a query is
    wrong."""
    if isinstance(error, DBAPIError):
        gone = _sqlstate(error).startswith(_DATABASE_GONE)
        return error.connection_invalidated or isinstance(error, InterfaceError) or gone
    return isinstance(error, (OSError, TimeoutError, PoolTimeout))


def _sqlstate(error: BaseException) -> str:
    """The SQLSTATE PostgreSQL gave for the driver's error under `error` ("" for none). SQLAlchemy's asyncpg adapter
    sets it as both sqlstate and pgcode, the name other drivers use."""
    orig = getattr(error, "orig", None)
    return str(getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None) or "")


# SQLSTATE of a statement that failed for the moment: transaction rollback (serialization failure, deadlock), lock
# not available (lock_timeout), query cancelled (statement_timeout), insufficient resources
_PASSING = ("40", "55P03", "57014", "53")


def transient(error: BaseException) -> bool:
    """Whether trying the same work again soon may succeed: PostgreSQL unreachable, or a statement that failed for the
    moment (a deadlock, a serialization failure, a lock or statement timeout, resources short). A refusal of the data
    or an error in the SQL itself (a bug) is not."""
    if unreachable(error):
        return True
    return isinstance(error, SQLAlchemyError) and _sqlstate(error).startswith(_PASSING)


def refused_data(error: BaseException) -> bool:
    """Whether PostgreSQL refused the data itself (SQLSTATE class 22, data exception, or 23, integrity), which trying
    again will not change; an outage, a deadlock or a lock timeout is not that."""
    return not unreachable(error) and _sqlstate(error).startswith(("22", "23"))


class DatabaseOutage:
    """Whether PostgreSQL is away for one part of this process: the first failure of an outage is logged and counted
    (newsagg_database_outages_total{part}), the failures beside it are not, and the first success after it says how
    long it lasted."""

    def __init__(self, part: str) -> None:
        self.part = part
        self._since: float | None = None

    def noted(self, error: BaseException) -> bool:
        """Records a failure; False when `error` is not an outage (the caller raises it)."""
        if not unreachable(error):
            return False
        if self._since is None:
            self._since = time.monotonic()
            DATABASE_OUTAGES.labels(self.part).inc()
            log.warning("%s: PostgreSQL unreachable, retrying with back-off: %s: %s", self.part,
                        type(error).__name__, str(error).split("\n", 1)[0])  # fmt: skip
        return True

    def ended(self) -> None:
        if self._since is not None:
            log.info("%s: PostgreSQL back after %.1f s", self.part, time.monotonic() - self._since)
            self._since = None

    async def retried(self, read: Callable[[], Awaitable[T]], *, cap: float = 5.0) -> T:
        """`read()`, tried again after a back-off wait (doubling up to `cap` seconds) while PostgreSQL is away."""
        backoff = Backoff(cap=cap)
        while True:
            try:
                result = await read()
            except FAILURES as error:
                stop_if_told(error)
                if not self.noted(error):
                    raise
                await asyncio.sleep(backoff.next_wait())
            else:
                self.ended()
                return result
