"""The README's first command, for real: `newsagg up --demo` on the embedded default, then SIGTERM.

No DATABASE_URL or REDIS_URL: PostgreSQL and Redis start from their pip wheels under a temporary NEWSAGG_HOME.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from app.runtime.processes import free_port
from tests.conftest import REPO, document, newsagg

pytestmark = pytest.mark.embedded
QUERY_TIMEOUT_S = 90


STARTED: list[subprocess.Popen[bytes]] = []


def _up(home: Path, port: int, demo: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(NEWSAGG_HOME=str(home), NEWSAGG_CRAWL_TICK_SECONDS="5")
    process = subprocess.Popen([sys.executable, "-m", "app", "up", "--demo", str(demo), "--port", str(port)],
                               cwd=REPO, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)  # fmt: skip
    STARTED.append(process)
    return process


def _articles(port: int) -> list[dict[str, Any]]:
    try:
        response = httpx.post(f"http://127.0.0.1:{port}/graphql", timeout=5,
                              json={"query": document("Articles"), "variables": {"first": 100}})  # fmt: skip
        edges: list[dict[str, Any]] = response.json()["data"]["articles"]["edges"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return []
    return edges


def _wait_for_articles(port: int, process: subprocess.Popen[bytes], log: Path) -> list[dict[str, Any]]:
    """A full page of 100 articles (the sample holds ~2,000; the first feeds land before the last)."""
    deadline = time.monotonic() + QUERY_TIMEOUT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()[-3000:]
        edges = _articles(port)
        if len(edges) == 100:
            return edges
        time.sleep(1)
    raise AssertionError("no articles within the time limit:\n" + log.read_text()[-3000:])


def _tree_pids(home: Path) -> dict[str, int]:
    pids: dict[str, int] = json.loads((home / "processes.json").read_text())
    postmaster = (home / "postgres" / "data" / "postmaster.pid").read_text().split("\n", 1)[0]
    pids["postgres"] = int(postmaster)
    pids["redis"] = int((home / "redis" / "redis.pid").read_text())
    return pids


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_gone(pids: dict[str, int], timeout: float = 30) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids.values()):
        time.sleep(0.2)
    return {name: pid for name, pid in pids.items() if _alive(pid)}


@pytest.fixture
def up_run(tmp_path: Path, sample_feeds: Path) -> Iterator[tuple[Path, int, Path, Path]]:
    home, log = tmp_path / "home", tmp_path / "up.log"
    yield home, free_port(), sample_feeds, log
    _leave_nothing_behind(home)


def _leave_nothing_behind(home: Path) -> None:
    """Even when a test failed: stop the supervisors it started, then anything they recorded as theirs."""
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
    with contextlib.suppress(OSError, ValueError, KeyError):
        for pid in _tree_pids(home).values():
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def test_up_serves_demo_articles_and_sigterm_stops_the_whole_tree(up_run: tuple[Path, int, Path, Path]) -> None:
    home, port, demo, log = up_run
    process = _up(home, port, demo, log)
    edges = _wait_for_articles(port, process, log)
    assert all(edge["node"]["title"] and edge["node"]["source"]["name"] for edge in edges)
    assert "newsagg users create-admin EMAIL" in log.read_text()  # a fresh database: how to make an administrator
    health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
    assert health["ok"] is True
    pids = _tree_pids(home)

    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0, log.read_text()[-3000:]
    assert _wait_gone(pids) == {}, log.read_text()[-3000:]


def test_commands_use_the_servers_of_the_running_up(up_run: tuple[Path, int, Path, Path]) -> None:
    home, port, demo, log = up_run
    process = _up(home, port, demo, log)
    _wait_for_articles(port, process, log)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")} | {"NEWSAGG_HOME": str(home)}
    postgres_pid = _tree_pids(home)["postgres"]

    exported = newsagg("opml", "export", env=env)
    admin = [sys.executable, "-m", "app", "users", "create-admin", "ops@example.com"]
    created = subprocess.run(admin, cwd=REPO, env=env, input="a long enough password\n", capture_output=True,
                             text=True, timeout=120)  # fmt: skip

    assert exported.returncode == 0, exported.stderr
    assert '<outline text="demo">' in exported.stdout  # the demo's sources
    assert "xmlUrl=" in exported.stdout
    assert created.returncode == 0, created.stderr
    assert _tree_pids(home)["postgres"] == postgres_pid  # the same server, no second one on the same data
    assert (home / "newsagg.lock").read_text() == str(process.pid)  # trying the lock did not erase its holder
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0, log.read_text()[-3000:]
    assert not (home / "servers.json").exists()


def test_a_killed_supervisor_leaves_nothing_that_blocks_the_next_start(up_run: tuple[Path, int, Path, Path]) -> None:
    home, port, demo, log = up_run
    first = _up(home, port, demo, log)
    _wait_for_articles(port, first, log)
    pids = _tree_pids(home)
    first.kill()  # kill -9: no cleanup code runs in the supervisor
    first.wait()
    assert _wait_gone(pids) == {}, "children must not outlive a killed supervisor"

    second = _up(home, port, demo, log)
    try:
        edges = _wait_for_articles(port, second, log)  # the same home, data and demo sources
        assert all(edge["node"]["title"] for edge in edges)
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0


def test_orphaned_servers_are_found_and_stopped_on_the_next_start(tmp_path: Path) -> None:
    """As if the supervisor died where no parent-death signal exists (macOS): the old servers still run."""
    from app.runtime.embedded import EmbeddedPostgres, EmbeddedRedis

    old_pg, old_redis = EmbeddedPostgres(tmp_path / "postgres"), EmbeddedRedis(tmp_path / "redis")
    old_pg.start()
    old_redis.start()
    assert old_pg._process is not None
    assert old_redis._process is not None
    orphans = {"postgres": old_pg._process.pid, "redis": old_redis._process.pid}

    new_pg, new_redis = EmbeddedPostgres(tmp_path / "postgres"), EmbeddedRedis(tmp_path / "redis")
    try:
        new_pg.start()
        new_redis.start()
        assert _wait_gone(orphans, timeout=10) == {}
    finally:
        new_redis.stop()
        new_pg.stop()
    old_pg._process.wait(5)
    old_redis._process.wait(5)


def test_when_embedded_postgresql_dies_the_whole_tree_stops(up_run: tuple[Path, int, Path, Path]) -> None:
    home, port, demo, log = up_run
    process = _up(home, port, demo, log)
    _wait_for_articles(port, process, log)
    pids = _tree_pids(home)
    psutil.Process(pids["postgres"]).kill()
    assert process.wait(60) == 1
    assert "embedded PostgreSQL exited" in log.read_text()
    assert _wait_gone(pids) == {}


def test_embedded_redis_that_dies_is_restarted_and_the_tree_carries_on(up_run: tuple[Path, int, Path, Path]) -> None:
    home, port, demo, log = up_run
    process = _up(home, port, demo, log)
    _wait_for_articles(port, process, log)
    before = _tree_pids(home)
    psutil.Process(before["redis"]).kill()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "embedded Redis exited" not in log.read_text():
        time.sleep(0.2)
    after = _wait_for_redis(home, before["redis"])
    assert process.poll() is None, log.read_text()[-3000:]
    assert {k: after[k] for k in ("api", "worker", "postgres")} == {k: before[k] for k in ("api", "worker", "postgres")}
    health = _wait_for_health(port)
    assert health["redis"]["ok"] is True, health
    assert len(_articles(port)) == 100
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0, log.read_text()[-3000:]
    assert _wait_gone(after) == {}


def _wait_for_redis(home: Path, old_pid: int) -> dict[str, int]:
    """The tree's pids once embedded Redis runs under a new pid."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            pids = _tree_pids(home)
            if pids["redis"] != old_pid and _alive(pids["redis"]):
                return pids
        time.sleep(0.2)
    raise AssertionError("embedded Redis was not started again")


def _wait_for_health(port: int) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            health: dict[str, Any] = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
            if health.get("ok"):
                return health
        time.sleep(0.5)
    raise AssertionError("the API never reported itself healthy again")
