"""Request ids (the caller's when sane, else new; on every response and WebSocket handshake) and the logs: one JSON
object a line carrying the request id, uvicorn's access log included; `--log-format` and NEWSAGG_LOG_FORMAT honoured."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from pathlib import Path

import httpx
import websockets
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from app.api.observability import RequestObservation
from app.observability import logs
from app.settings import Settings
from tests.conftest import newsagg
from tests.processes import deployment_env, running

HEX_ID = re.compile(r"[0-9a-f]{32}")


async def test_a_sane_request_id_comes_back_and_any_other_is_replaced(api_url: str) -> None:
    hostile = ["two words", "x" * 10_000, "<script>alert(1)</script>", "id;DROP TABLE", "-starts-with-a-dash", ""]
    async with httpx.AsyncClient(base_url=api_url) as http:
        kept = await http.get("/healthz", headers={"x-request-id": "lb-7f3a.2:9"})
        fresh = [await http.get("/healthz") for _ in range(2)]
        replaced = [await http.get("/healthz", headers={"x-request-id": bad}) for bad in hostile]

    assert kept.headers["x-request-id"] == "lb-7f3a.2:9"
    made = [response.headers["x-request-id"] for response in fresh + replaced]
    assert all(HEX_ID.fullmatch(rid) for rid in made), made
    assert len(set(made)) == len(made)


async def test_a_response_refused_below_the_router_and_a_websocket_handshake_carry_one(
    api_url: str, settings: Settings
) -> None:
    async with httpx.AsyncClient(base_url=api_url) as http:
        too_big = await http.post("/graphql", content=b"x" * (settings.api_max_body_bytes + 1),
                                  headers={"content-type": "application/json", "x-request-id": "big-1"})  # fmt: skip
    assert too_big.status_code == 413
    assert too_big.headers["x-request-id"] == "big-1"

    url = api_url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
                                  additional_headers={"x-request-id": "socket-9"}) as ws:  # fmt: skip
        assert ws.response is not None
        assert ws.response.headers["x-request-id"] == "socket-9"


async def test_json_log_lines_carry_the_request_id_the_response_header_returned(
    settings: Settings, tmp_path: Path
) -> None:
    env = deployment_env(settings, tmp_path / "home")
    with running(env, "--log-format", "json", "api", log=tmp_path / "api.log") as api:
        async with httpx.AsyncClient(base_url=api.url) as http:
            given = await http.post("/graphql", json={"query": "{ __typename }"}, headers={"x-request-id": "trace-42"})
            made = await http.get("/healthz")
    lines = [json.loads(line) for line in api.lines()]  # every line is JSON, uvicorn's startup lines included

    access = {line["request_id"]: line for line in lines if line["logger"] == "uvicorn.access" and "request_id" in line}
    assert given.headers["x-request-id"] == "trace-42"
    assert made.headers["x-request-id"] in access
    line = access["trace-42"]
    assert (line["level"], line["method"], line["path"], line["status"]) == ("info", "POST", "/graphql", 200)
    assert any(line["logger"] == "uvicorn.error" and "request_id" not in line for line in lines)  # outside requests


def migrate(settings: Settings, tmp_path: Path, *options: str, **env: str) -> list[str]:
    """`newsagg [options] migrate` on the run's (already migrated) database: Alembic logs a couple of lines."""
    done = newsagg(*options, "migrate", env=deployment_env(settings, tmp_path / "home", **env), check=True)
    lines = done.stderr.splitlines()
    assert any("PostgresqlImpl" in line for line in lines), done.stderr
    return lines


def is_json(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def test_log_format_is_json_off_a_terminal_and_text_when_asked(settings: Settings, tmp_path: Path) -> None:
    assert all(is_json(line) for line in migrate(settings, tmp_path))  # standard error is a pipe here
    assert not any(is_json(line) for line in migrate(settings, tmp_path, "--log-format", "text"))
    assert not any(is_json(line) for line in migrate(settings, tmp_path, NEWSAGG_LOG_FORMAT="text"))
    assert all(is_json(line) for line in migrate(settings, tmp_path, "--log-format", "json", NEWSAGG_LOG_FORMAT="text"))


async def test_every_line_logged_while_a_request_runs_carries_its_id_however_many_run_at_once() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.formatter(logs.JSON))
    logger = logging.getLogger("newsagg.tests.inside_a_request")
    logger.addHandler(handler)
    logger.propagate = False

    async def endpoint(request: Request) -> PlainTextResponse:
        logger.warning("resolving %s", request.url.path)
        await asyncio.sleep(0)  # let the other requests interleave
        logger.warning("resolved")
        return PlainTextResponse(request.state.request_id)

    app = Starlette(routes=[Route("/{n}", endpoint)], middleware=[Middleware(RequestObservation)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://newsagg") as http:
        responses = await asyncio.gather(*(http.get(f"/{n}") for n in range(50)))
    logger.removeHandler(handler)

    ids = [response.headers["x-request-id"] for response in responses]
    assert [response.text for response in responses] == ids  # the scope's state holds the same id
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    by_request = {rid: [line["event"] for line in lines if line["request_id"] == rid] for rid in ids}
    assert by_request == {rid: [f"resolving /{n}", "resolved"] for n, rid in enumerate(ids)}
    assert list(lines[0])[:5] == ["timestamp", "level", "logger", "request_id", "event"]
