"""A test that runs past `NEWSAGG_TEST_WATCHDOG_SECONDS` (600) prints, once, every thread's stack and every asyncio
task's: a hang in the suite's one event loop shows where it waits instead of only running out CI's time. `kill -USR1`
on the pytest process prints the same at any moment."""

from __future__ import annotations

import asyncio
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

import pytest


def dump(signum: int | None = None, frame: FrameType | None = None) -> None:
    """Every thread's stack, then (run in the main thread, as a signal handler is) every task of its running loop."""
    out = sys.stderr
    print("\n==== watchdog: thread stacks", file=out, flush=True)
    faulthandler.dump_traceback(file=out, all_threads=True)
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:  # no loop running in the main thread
        return
    print(f"==== watchdog: {len(tasks)} asyncio tasks", file=out, flush=True)
    for task in tasks:
        task.print_stack(limit=30, file=out)
    out.flush()


def install() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGUSR1, dump)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    seconds = float(os.environ.get("NEWSAGG_TEST_WATCHDOG_SECONDS", "600"))
    print_later = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGUSR1))
    print_later.daemon = True
    print_later.start()
    try:
        yield
    finally:
        print_later.cancel()
