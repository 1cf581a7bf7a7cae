"""`newsagg up --api 2 --workers 2` for real: two API processes behind Debian's HAProxy and two workers on the test
run's PostgreSQL and Redis. Both API processes answer through the balancer, a subscription through it receives
events, one API killed leaves the other answering while it is restarted, and SIGTERM stops the whole tree."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from app.runtime.balancer import BACKEND_HEADER, haproxy_binary
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from tests.conftest import REPO, document, next_message, subscribe_message, ws_connection
from tests.newsroom import add_breaking_event, add_source
from tests.processes import deployment_env

pytestmark = pytest.mark.skipif(haproxy_binary() is None, reason="no haproxy binary (apt-get install haproxy)")
HEALTH = "{ health { ok } }"


@pytest.fixture
def up_tree(settings: Settings, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """The supervisor, the balancer's URL and the home holding processes.json; every process gone afterwards."""
    home, port, log = tmp_path / "home", free_port(), tmp_path / "up.log"
    env = deployment_env(settings, home, NEWSAGG_LOG_FORMAT="text")
    with log.open("wb") as output:
        process = subprocess.Popen([sys.executable, "-m", "app", "up", "--api", "2", "--workers", "2", "--port",
                                    str(port)], cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT)  # fmt: skip
    seen: set[int] = set()
    try:
        yield process, f"http://127.0.0.1:{port}", home
    finally:
        seen |= set(_pids(home).values()) if (home / "processes.json").exists() else set()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(60)
        for pid in seen:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def _pids(home: Path) -> dict[str, int]:
    pids: dict[str, int] = json.loads((home / "processes.json").read_text())
    return pids


def _ask(url: str) -> httpx.Response:
    """A query through the balancer, as GraphQL over HTTP's GET."""
    return httpx.get(url + "/graphql", params={"query": HEALTH}, timeout=10)


def _until_both_answer(process: subprocess.Popen[bytes], url: str, log: Path) -> set[str]:
    backends: set[str] = set()
    deadline = time.monotonic() + 90
    while backends != {"api-1", "api-2"} and time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()[-3000:]
        with contextlib.suppress(httpx.HTTPError):
            response = _ask(url)
            if response.status_code == 200:
                backends.add(response.headers[BACKEND_HEADER])
        time.sleep(0.2)
    return backends


async def _breaking_through(url: str, services: Services) -> str:
    """Breaking events written to the outbox (the workers relay them) until one reaches a subscriber."""
    async with ws_connection(url) as ws:
        await ws.send(subscribe_message("1", document("BreakingNews")))
        for story in range(1, 20):
            await add_breaking_event(services, story)
            with contextlib.suppress(TimeoutError):
                message = await next_message(ws, seconds=3)
                title: str = message["payload"]["data"]["breakingNews"]["title"]
                return title
    return ""


def _answers_while_restarted(url: str, home: Path, killed: int) -> tuple[list[int], set[str]]:
    """Status of each query until the supervisor has a new api-1 that the balancer sends queries to again."""
    statuses, backends = [], set()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        response = _ask(url)
        statuses.append(response.status_code)
        backends.add(response.headers.get(BACKEND_HEADER, ""))
        if _pids(home)["api-1"] != killed and response.headers.get(BACKEND_HEADER) == "api-1":
            break
        time.sleep(0.05)
    return statuses, backends


async def test_two_api_processes_behind_haproxy_share_the_load_survive_a_kill_and_stop_together(
    up_tree: tuple[subprocess.Popen[bytes], str, Path], settings: Settings, services: Services, tmp_path: Path
) -> None:
    await add_source(services, settings, "wire")  # a database with a source: no default sources are loaded
    process, url, home = up_tree
    log = tmp_path / "up.log"

    assert await asyncio.to_thread(_until_both_answer, process, url, log) == {"api-1", "api-2"}
    assert (await _breaking_through(url, services)).startswith("Story ")

    killed = _pids(home)["api-1"]
    psutil.Process(killed).kill()
    statuses, backends = await asyncio.to_thread(_answers_while_restarted, url, home, killed)
    assert set(statuses) == {200}, log.read_text()[-3000:]  # every query answered, by api-2 meanwhile
    assert {"api-1", "api-2"} <= backends
    assert _pids(home)["api-1"] != killed

    tree = _pids(home)
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0, log.read_text()[-3000:]
    assert [name for name, pid in tree.items() if psutil.pid_exists(pid) and _alive(pid)] == []


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
