"""The reference client: `graphql-ws` from npm (tests/js, versions pinned by its package-lock.json) signs in through
connectionParams, asks who it is, subscribes to breakingNews and gets the event. It skips, saying why, where node or
the packages are missing (the `node` fixture)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from app.outbox.relay import relay
from app.services import Services
from app.stories.velocity import BREAKING_TOPIC
from tests.conftest import NODE_TOOLS, GraphQLClient, document, until_listening
from tests.newsroom import add_breaking_event, sign_up


async def lines(process: asyncio.subprocess.Process) -> Any:
    assert process.stdout is not None
    while line := await asyncio.wait_for(process.stdout.readline(), 20):
        yield json.loads(line)


@contextlib.asynccontextmanager
async def reference_client(node: str, api_url: str, token: str, operation: str, version: str
                           ) -> AsyncIterator[tuple[asyncio.subprocess.Process, Any]]:  # fmt: skip
    """tests/js/subscribe.mjs signed in with `token`, subscribed to `operation` (a graphql/ document); yields the
    process and its frames (one JSON object per line), and kills it if the test ends before it does."""
    url = api_url.replace("http://", "ws://") + "/graphql"
    arguments = [str(NODE_TOOLS / "subscribe.mjs"), url, token, document(operation), version]
    client = await asyncio.create_subprocess_exec(node, *arguments, cwd=NODE_TOOLS, stdout=asyncio.subprocess.PIPE)
    try:
        yield client, lines(client)
    finally:
        if client.returncode is None:
            client.kill()
            await client.wait()


async def test_the_graphql_ws_client_signs_in_and_gets_breaking_news(node: str, api_url: str, gql: GraphQLClient,
                                                                     services: Services) -> None:  # fmt: skip
    credentials = {"email": "ws-client@example.com"}
    token = await sign_up(gql, **credentials)
    async with reference_client(node, api_url, token, "BreakingNews", "1") as (client, frames):
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


async def test_the_graphql_ws_client_with_a_bad_token_is_refused_with_4403(node: str, api_url: str) -> None:
    async with reference_client(node, api_url, "nst_made-up", "BreakingNews", "1") as (client, lines_of):
        frames = [frame async for frame in lines_of]
        assert {"closed": 4403} in frames
        assert {"connected": True} not in frames
        assert await asyncio.wait_for(client.wait(), 20) == 1
