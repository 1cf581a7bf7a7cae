"""Metrics of several processes as one: every API and worker process of a host writes its numbers to files in one
folder (prometheus-client's multiprocess mode), and any API's /metrics adds them all up.

prometheus-client decides when it is first imported whether it writes to files, from PROMETHEUS_MULTIPROC_DIR:
`share_folder` sets it, so `newsagg up`, `api` and `worker` call it before anything imports a metric. The folder is
emptied by the first process of a deployment (the one that finds nobody holding its lock), never under running
ones: a worker restarted beside a running API adds to the totals instead of wiping them.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import re
import sys
from pathlib import Path
from typing import IO, Any

ENVIRONMENT = "PROMETHEUS_MULTIPROC_DIR"
LOCK_FILE = "processes.lock"
_LIVE_GAUGE = re.compile(r"gauge_live\w+?_(\d+)\.db")  # a gauge counted only while its process lives
_held: list[IO[str]] = []  # the lock stays held (shared) for the life of the process


def share_folder(folder: Path) -> None:
    """Join (or, first of a deployment, empty and start) the metrics folder of this host."""
    if "prometheus_client.values" in sys.modules and os.environ.get(ENVIRONMENT) != str(folder):
        raise RuntimeError("prometheus_client was imported before the metrics folder was chosen")
    folder.mkdir(parents=True, exist_ok=True)
    handle = (folder / LOCK_FILE).open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pass  # other processes of the deployment run: add to their numbers
    else:
        for stale in folder.glob("*.db"):
            stale.unlink()
    fcntl.flock(handle, fcntl.LOCK_SH)  # waits while a first process is still emptying the folder
    _held.append(handle)
    os.environ[ENVIRONMENT] = str(folder)
    atexit.register(_leave, os.getpid(), folder)


def _leave(pid: int, folder: Path) -> None:
    from prometheus_client import multiprocess

    if os.getpid() == pid:  # not in a forked child that inherited the hook
        multiprocess.mark_process_dead(pid, str(folder))  # type: ignore[no-untyped-call]


def exposition() -> tuple[bytes, str]:
    """Every metric in the text format, and its media type: the whole folder's when processes share one, else this
    process's."""
    # imported here, not at the top: `share_folder` must run before prometheus_client is first imported
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return generate_latest(_registry()), CONTENT_TYPE_LATEST


def serve(address: str) -> None:
    """/metrics on HOST:PORT from a thread of this process (a worker's, where no API runs)."""
    from prometheus_client import start_http_server

    host, port = address.rsplit(":", 1)
    start_http_server(int(port), addr=host or "0.0.0.0", registry=_registry())


def _registry() -> Any:
    from prometheus_client import REGISTRY, CollectorRegistry

    folder = os.environ.get(ENVIRONMENT)
    if not folder:
        return REGISTRY
    registry = CollectorRegistry()
    registry.register(_Folder(Path(folder)))
    return registry


class _Folder:
    """Every process's numbers in the folder, read afresh at each scrape."""

    def __init__(self, folder: Path) -> None:
        from prometheus_client.multiprocess import MultiProcessCollector

        self.folder = folder
        self.files = MultiProcessCollector(None, path=str(folder))  # type: ignore[no-untyped-call]

    def collect(self) -> Any:
        _forget_dead(self.folder)
        return self.files.collect()  # type: ignore[no-untyped-call]


def _forget_dead(folder: Path) -> None:
    """Live gauges (connections open, say) of a process that died without saying so (kill -9) stop counting."""
    from prometheus_client import multiprocess

    for path in folder.glob("gauge_live*.db"):
        match = _LIVE_GAUGE.fullmatch(path.name)
        if match and not _alive(int(match.group(1))):
            with contextlib.suppress(FileNotFoundError):
                multiprocess.mark_process_dead(int(match.group(1)), str(folder))  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True
