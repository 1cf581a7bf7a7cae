"""The reference client: `graphql-ws` from npm (tests/js, versions pinned by its package-lock.json) signs in through
connectionParams, asks who it is, subscribes to breakingNews and gets the event. The test installs the client with
`npm ci` the first time; it skips, saying why, where node/npm are missing or the npm registry cannot be reached."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.outbox.relay import relay
from app.services import Services
from app.stories.velocity import BREAKING_TOPIC
from tests.conftest import GraphQLClient, document, until_listening
from tests.newsroom import add_breaking_event, sign_up

CLIENT = Path(__file__).resolve().parent / "js"


@pytest.fixture(scope="session")
def node() -> str:
    """node, with the client's packages installed into tests/js/node_modules."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to run the graphql-ws reference client (tests/js)")
    if not (CLIENT / "node_modules" / "graphql-ws").is_dir():
        try:
            installed = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=CLIENT, capture_output=True,
                                       text=True, timeout=300)  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.skip("npm ci in tests/js took over 5 minutes (is the npm registry reachable?)")
        if installed.returncode != 0:
            pytest.skip(f"npm ci in tests/js failed (is the npm registry reachable?): {installed.stderr[-400:]}")
    return node


async def lines(process: asyncio.subprocess.Process) -> Any:
    assert process.stdout is not None
    while line := await asyncio.wait_for(process.stdout.readline(), 20):
        yield json.loads(line)


async def test_the_graphql_ws_client_signs_in_and_gets_breaking_news(node: str, api_url: str, gql: GraphQLClient,
                                                                     services: Services) -> None:  # fmt: skip
    credentials = {"email": "ws-client@example.com"}
    token = await sign_up(gql, **credentials)
    url = api_url.replace("http://", "ws://") + "/graphql"
    arguments = [str(CLIENT / "subscribe.mjs"), url, token, document("BreakingNews"), "1"]
    client = await asyncio.create_subprocess_exec(node, *arguments, cwd=CLIENT, stdout=asyncio.subprocess.PIPE)
    try:
        frames = lines(client)
        assert await anext(frames) == {"connected": True}
        assert await anext(frames) == {"viewer": {"data": {"viewer": {"email": credentials["email"]}}}}
        await until_listening(services, BREAKING_TOPIC)
        await add_breaking_event(services, 5)
        assert await relay(services.engine, services.redis, [BREAKING_TOPIC]) == 1
        event = (await anext(frames))["next"]["data"]["breakingNews"]
        assert (event["title"], event["sourceCount"], event["topics"]) == ("Story 5", 6, ["WORLD"])
        assert event["cursor"]
        assert [frame async for frame in frames] == [{"complete": True}, {"closed": 1000}]
        assert await asyncio.wait_for(client.wait(), 20) == 0
    finally:
        if client.returncode is None:
            client.kill()
            await client.wait()


async def test_the_graphql_ws_client_with_a_bad_token_is_refused_with_4403(node: str, api_url: str) -> None:
    url = api_url.replace("http://", "ws://") + "/graphql"
    arguments = [str(CLIENT / "subscribe.mjs"), url, "nst_made-up", document("BreakingNews"), "1"]
    client = await asyncio.create_subprocess_exec(node, *arguments, cwd=CLIENT, stdout=asyncio.subprocess.PIPE)
    try:
        frames = [frame async for frame in lines(client)]
        assert {"closed": 4403} in frames
        assert {"connected": True} not in frames
        assert await asyncio.wait_for(client.wait(), 20) == 1
    finally:
        if client.returncode is None:
            client.kill()
            await client.wait()
