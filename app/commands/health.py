"""`newsagg health api|worker`: a container's healthcheck, in the image itself (no curl needed). Exit 0 when this
host's API answers /healthz with 200, or when a worker of this host renewed its heartbeat in PostgreSQL recently (in
DATABASE_URL, else in the database of the `newsagg up` running on NEWSAGG_HOME: its servers.json). It never starts a
server of its own: a healthcheck that finds nothing running says so."""

from __future__ import annotations

import socket
import sys
from datetime import timedelta
from typing import TYPE_CHECKING

from app.commands.database import with_engine
from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


def health(settings: Settings, what: str) -> int:
    return _api(settings) if what == "api" else _worker(settings)


def _api(settings: Settings) -> int:
    import httpx

    url = f"http://127.0.0.1:{settings.api_port}/healthz"
    try:
        status = httpx.get(url, timeout=settings.health_probe_seconds).status_code
    except httpx.HTTPError as error:
        print(f"{url}: {error}", file=sys.stderr)
        return 1
    print(f"{url}: {status}")
    return 0 if status == 200 else 1


def _worker(settings: Settings) -> int:
    from app.runtime.servers_file import running_database_url
    from app.workers.repository import beating_on

    host = socket.gethostname()[:80]  # as the heartbeat names it
    url = settings.database_url or running_database_url(settings.home)
    if not url:
        print(f"DATABASE_URL is not set and no `newsagg up` is running on {settings.home}: no heartbeats to read",
              file=sys.stderr)  # fmt: skip
        return 1

    async def run(engine: AsyncEngine) -> int:
        async with engine.connect() as connection:
            alive = await beating_on(connection, host, within=timedelta(seconds=settings.worker_gone_after_seconds))
        print(f"{alive} worker(s) of {host} beating")
        return 0 if alive else 1

    return with_engine(settings.model_copy(update={"database_url": url}), run)
