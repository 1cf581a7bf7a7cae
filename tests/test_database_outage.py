"""PostgreSQL stopped for ten seconds under a running API, then started again on the same port and data.

While it is away every GraphQL request is answered promptly with a coded, masked error (no SQL, driver or traceback
text) and /healthz says 503 with the database not ok, so a balancer takes the instance out of rotation; once it is
back the same instance answers queries and reports healthy again without a restart. The test runs a PostgreSQL
server of its own, so stopping it touches nobody else."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import create_async_engine

from app.db.migrate import upgrade
from app.runtime.embedded import EmbeddedPostgres
from app.services import Services
from app.settings import Settings
from tests.conftest import serve_api

SOURCES = "{ sources(first: 5) { edges { node { id } } } }"
OUTAGE_SECONDS = 10
PROMPT_SECONDS = 5  # a request that takes longer than this during the outage counts as hung
LEAKS = ("asyncpg", "sqlalchemy", "Traceback", "SELECT", "Connection refused", "postgres")


async def sources(http: httpx.AsyncClient) -> tuple[int, dict[str, Any]]:
    response = await http.post("/graphql", json={"query": SOURCES}, timeout=PROMPT_SECONDS)
    return response.status_code, response.json()


async def health(http: httpx.AsyncClient) -> tuple[int, dict[str, Any]]:
    response = await http.get("/healthz", timeout=PROMPT_SECONDS)
    return response.status_code, response.json()


async def test_the_api_answers_coded_errors_while_postgresql_is_away_and_recovers_when_it_returns(
    settings: Settings, tmp_path: Path
) -> None:
    server = EmbeddedPostgres(tmp_path / "pg")
    server.start()
    opened: Services | None = None
    try:
        engine = create_async_engine(server.url())
        await upgrade(engine)
        await engine.dispose()
        opened = Services.open(settings.model_copy(update={"database_url": server.url()}))
        async with serve_api(opened.settings, opened) as api_url, httpx.AsyncClient(base_url=api_url) as http:
            # given a working API
            status, body = await sources(http)
            assert (status, body.get("errors")) == (200, None), body
            assert body["data"]["sources"]["edges"] == []
            assert (await health(http))[0] == 200

            # when PostgreSQL goes away for ten seconds
            port = server.port
            server.stop()
            codes: set[str] = set()
            rounds = 0
            deadline = time.monotonic() + OUTAGE_SECONDS
            while time.monotonic() < deadline:
                started = time.monotonic()
                response = await http.post("/graphql", json={"query": SOURCES}, timeout=PROMPT_SECONDS)
                assert time.monotonic() - started < PROMPT_SECONDS
                assert response.status_code == 200, response.text  # a GraphQL error, not a crashed server
                body = response.json()
                assert body["data"] is None, body
                assert body["errors"], body
                codes.update(error["extensions"]["code"] for error in body["errors"])
                assert not [leak for leak in LEAKS if leak.lower() in response.text.lower()], response.text
                status, report = await health(http)
                assert (status, report["ok"], report["database"]["ok"]) == (503, False, False), report
                rounds += 1
                await asyncio.sleep(0.25)
            assert rounds >= 10
            assert codes == {"INTERNAL_SERVER_ERROR"}

            # then it comes back on the same port and data: the same API answers again on its own
            server.start()
            assert server.port == port
            async with asyncio.timeout(30):
                while True:
                    status, body = await sources(http)
                    if status == 200 and not body.get("errors") and (await health(http))[0] == 200:
                        break
                    await asyncio.sleep(0.25)
            assert body["data"]["sources"]["edges"] == []
    finally:
        if opened is not None:
            await opened.close()
        server.stop()
