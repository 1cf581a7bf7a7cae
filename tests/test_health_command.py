"""`newsagg health api|worker`, the containers' healthchecks: 0 while this host's API answers /healthz or one of its
workers beats, 1 otherwise."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

from app.runtime.processes import free_port
from app.runtime.servers_file import clear_servers, write_servers
from app.services import Services
from app.settings import Settings
from app.workers.repository import beat, leave
from tests.conftest import REPO
from tests.processes import deployment_env


async def _health(settings: Settings, home: Path, what: str, *, unset: tuple[str, ...] = (), **extra: str) -> int:
    env = {k: v for k, v in deployment_env(settings, home, **extra).items() if k not in unset}
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "app", "health", what, cwd=REPO, env=env,
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


async def test_worker_health_reads_the_heartbeats_of_the_newsagg_up_running_on_its_home(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    """Given no DATABASE_URL and a home a `newsagg up` runs on (its servers.json names its database), the check reads
    that database's heartbeats, as the other commands use its servers; with no `up` there, it fails saying so."""
    async with services.engine.begin() as connection:
        await beat(connection, "probe:1:bbbbbb", host=socket.gethostname()[:80], pid=1)
    home = tmp_path / "home"
    home.mkdir()
    assert await _health(settings, home, "worker", unset=("DATABASE_URL",)) == 1  # nothing runs there
    assert settings.database_url
    write_servers(home, {"DATABASE_URL": settings.database_url, "REDIS_URL": "redis://127.0.0.1:9/0"})
    assert await _health(settings, home, "worker", unset=("DATABASE_URL",)) == 0
    async with services.engine.begin() as connection:
        await leave(connection, "probe:1:bbbbbb")
    assert await _health(settings, home, "worker", unset=("DATABASE_URL",)) == 1
    clear_servers(home)  # `up` stopped
    assert await _health(settings, home, "worker", unset=("DATABASE_URL",)) == 1


async def test_api_health_asks_the_api_on_its_port(api_url: str, settings: Settings, tmp_path: Path) -> None:
    port = api_url.rsplit(":", 1)[1]
    assert await _health(settings, tmp_path, "api", NEWSAGG_API_PORT=port) == 0
    assert await _health(settings, tmp_path, "api", NEWSAGG_API_PORT=str(free_port())) == 1  # nobody listens
