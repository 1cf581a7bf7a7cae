"""`newsagg health api|worker`, the containers' healthchecks: 0 while this host's API answers /healthz or one of its
workers beats, 1 otherwise."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from app.workers.repository import beat, leave
from tests.conftest import REPO
from tests.processes import deployment_env


async def _health(settings: Settings, home: Path, what: str, **extra: str) -> int:
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "app", "health", what, cwd=REPO,
                                                   env=deployment_env(settings, home, **extra),
                                                   stdout=asyncio.subprocess.DEVNULL,
                                                   stderr=asyncio.subprocess.DEVNULL)  # fmt: skip
    return await process.wait()


async def test_worker_health_follows_this_hosts_heartbeats(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    assert await _health(settings, tmp_path, "worker") == 1  # no worker beats here
    async with services.engine.begin() as connection:
        await beat(connection, "probe:1:aaaaaa", host=socket.gethostname()[:80], pid=1)
    assert await _health(settings, tmp_path, "worker") == 0
    async with services.engine.begin() as connection:
        await leave(connection, "probe:1:aaaaaa")
    assert await _health(settings, tmp_path, "worker") == 1


async def test_api_health_asks_the_api_on_its_port(api_url: str, settings: Settings, tmp_path: Path) -> None:
    port = api_url.rsplit(":", 1)[1]
    assert await _health(settings, tmp_path, "api", NEWSAGG_API_PORT=port) == 0
    assert await _health(settings, tmp_path, "api", NEWSAGG_API_PORT=str(free_port())) == 1  # nobody listens
