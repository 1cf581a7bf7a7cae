"""A real webhook receiver on a loopback port, for bench.notify and the webhook tests: it verifies each signature as
scripts/verify_webhook.py does, and answers 500 to the first `failures` calls (or to all, with `failures=-1`)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from app.runtime.processes import free_port

_SPEC = importlib.util.spec_from_file_location(
    "verify_webhook", Path(__file__).parents[1] / "scripts" / "verify_webhook.py"
)
assert _SPEC
assert _SPEC.loader
verify_webhook = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(verify_webhook)


@dataclass
class Receiver:
    secrets: dict[str, str] = field(default_factory=dict)  # path -> the endpoint's secret
    failures: int = 0
    calls: int = 0
    received: list[dict[str, Any]] = field(default_factory=list)  # bodies accepted, signature verified
    invalid: int = 0
    url: str = ""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.calls += 1
        status = 200
        if not verify_webhook.valid(self.secrets.get(scope["path"], ""), headers.get("newsagg-signature", ""), body):
            self.invalid += 1
            status = 400
        elif self.failures == -1 or self.calls <= self.failures:
            status = 500
        else:
            self.received.append(json.loads(body))
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"x" * 100_000})  # more than the reader reads


@contextlib.asynccontextmanager
async def receiver(failures: int = 0) -> AsyncIterator[Receiver]:
    app = Receiver(failures=failures)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn has no event for it)
        await asyncio.sleep(0.02)
    app.url = f"http://127.0.0.1:{port}"
    try:
        yield app
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
