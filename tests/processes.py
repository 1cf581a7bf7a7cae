"""`newsagg api` and `newsagg worker` as an operator starts them (own processes, own metrics folder, logs to a file),
stopped with SIGTERM at the end; and reading their /metrics."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from app.runtime.processes import free_port
from app.settings import Settings
from tests.conftest import REPO

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def deployment_env(settings: Settings, home: Path, **extra: str) -> dict[str, str]:
    """The test run's database and Redis, a home (and so a metrics folder) of the deployment's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSAGG_", "MEILI_", "PROMETHEUS_"))}
    assert settings.database_url
    assert settings.redis_url
    return env | {"DATABASE_URL": settings.database_url, "REDIS_URL": settings.redis_url, "NEWSAGG_HOME": str(home),
                  "NEWSAGG_QUEUE_NAME": f"{settings.queue_name}:processes", "NEWSAGG_ALLOW_LOOPBACK_SOURCES": "true",
                  "NEWSAGG_POLITENESS_REQUESTS_PER_SECOND": "1000", "NEWSAGG_POLITENESS_CONCURRENT_PER_SITE": "100",
                  **extra}  # fmt: skip


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    log: Path
    url: str = ""

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()


@contextlib.contextmanager
def running(env: dict[str, str], *args: str, log: Path, port: int | None = None) -> Iterator[Running]:
    """`newsagg <args>`, its standard error in `log` (appended to); for `api` (on `port`, else a free one), until
    /healthz answers."""
    port = port or free_port()
    command = [*args, "--port", str(port)] if args[-1] == "api" else list(args)
    with log.open("ab") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "app", *command], cwd=REPO, env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip
    started = Running(process, log, f"http://127.0.0.1:{port}" if args[-1] == "api" else "")
    try:
        if started.url:
            _until_serving(started)
        yield started
    finally:
        if process.poll() is None:  # a test may have killed it already
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def _until_serving(started: Running) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert started.process.poll() is None, started.log.read_text()
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(started.url + "/healthz", timeout=2).status_code == 200:
                return
        time.sleep(0.1)
    raise TimeoutError(started.log.read_text())


def parse(exposition: str) -> Samples:
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(exposition) for sample in family.samples}  # fmt: skip


async def scrape(http: httpx.AsyncClient) -> Samples:
    response = await http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, series), v in samples.items() if n == name and wanted <= series)
