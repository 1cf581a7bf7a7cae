"""A loop that waits out failures must still stop when told to: a library may end a call that a cancellation cut off
with an error of its own instead of CancelledError (redis-py raises ConnectionError when the connection it was reading
from closes at that moment; a driver may raise on the connection it was cancelled on). A loop that caught that error
as one more outage would go on for good: a worker outliving its supervisor, a shutdown waiting on it forever."""

from __future__ import annotations

import asyncio


def stop_if_told(error: BaseException | None = None) -> None:
    """Raise CancelledError (from `error`) if the running task has been told to stop; return otherwise. Without an
    error: a stop a library dropped (Python 3.11's asyncio.wait_for returns a result that was ready as its task was
    cancelled, and the cancellation is lost; redis-py sends every command through it when it has a socket timeout)
    is still counted on the task, and raised here."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError from error
