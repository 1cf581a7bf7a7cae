"""`newsagg up --demo ARCHIVE` on the whole snapshot archive, as the README runs it: within two minutes of `up`
starting (embedded servers, migrations and unpacking included), a breaking story reaches the README's BreakingNews
subscription, stories gather from several outlets and trending fills."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.runtime.processes import free_port
from tests.conftest import REPO, document, subscribe_ws
from tests.test_embedded import STARTED, _leave_nothing_behind

pytestmark = pytest.mark.embedded
DEADLINE_S = 120  # the README's promise, counted from the start of `up`


@pytest.fixture
def archive(shared_data: Path) -> Path:
    packed = shared_data / "feeds" / "gesab001_headlines_all_snapshots.tar.xz"
    if not packed.is_file():
        pytest.skip(f"{packed} is missing")
    return packed


def _query(port: int, name: str, variables: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"http://127.0.0.1:{port}/graphql", timeout=10,
                          json={"query": document(name), "variables": variables})  # fmt: skip
    data: dict[str, Any] = response.json()["data"]
    return data


async def _breaking_news(port: int, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    """Subscribes as soon as the API answers, then waits for the first event."""
    while True:
        assert process.poll() is None, "newsagg up exited"
        try:
            async for message in subscribe_ws(f"http://127.0.0.1:{port}", document("BreakingNews"), {}):
                assert message["type"] == "next", message
                event: dict[str, Any] = message["payload"]["data"]["breakingNews"]
                return event
        except OSError:  # not listening yet
            await asyncio.sleep(1)


def test_stories_gather_and_one_breaks_within_two_minutes(archive: Path, tmp_path: Path) -> None:
    home, log, port = tmp_path / "home", tmp_path / "up.log", free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL") and "NEWSAGG_" not in k}
    process = subprocess.Popen([sys.executable, "-m", "app", "up", "--demo", str(archive), "--port", str(port)],
                               cwd=REPO, env={**env, "NEWSAGG_HOME": str(home)}, stdout=log.open("ab"),
                               stderr=subprocess.STDOUT)  # fmt: skip
    STARTED.append(process)
    try:
        try:
            event = asyncio.run(asyncio.wait_for(_breaking_news(port, process), DEADLINE_S))
        except (TimeoutError, AssertionError) as error:
            raise AssertionError(f"no breaking story in time ({error!r}):\n{log.read_text()[-3000:]}") from None
        assert event["sourceCount"] >= 5
        assert event["velocity"] > 2
        stories = [e["node"] for e in _query(port, "Stories", {"first": 100})["stories"]["edges"]]
        assert sum(story["sourceCount"] >= 2 for story in stories) >= 10
        trending = _query(port, "Trending", {"window": "FIFTEEN_MINUTES", "first": 10})["trending"]
        assert trending
        assert all(trend["arrivals"] > 0 for trend in trending)
    finally:
        _leave_nothing_behind(home)
