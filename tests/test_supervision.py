"""`newsagg up`'s supervision of its children: one that stops answering /healthz is restarted, one that ignores
SIGTERM is killed after the grace period, and a child that keeps failing spends its restart budget and stops all."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import redis
from prometheus_client import REGISTRY

from app.runtime.children import Child, Policy, Restarted, stop_all, supervise
from app.runtime.embedded import EmbeddedRedis
from app.runtime.processes import free_port

# Answers /healthz twice, then hangs inside the third request (single-threaded: nothing is answered any more);
# deaf to SIGTERM, as a process stuck in a blocking call can be.
HANGING_API = """
import http.server, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
answered = 0
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global answered
        answered += 1
        if answered > 2:
            time.sleep(3600)
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""

DEAF = """
import pathlib, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pathlib.Path(sys.argv[1]).write_text("ready")
time.sleep(3600)
"""


def restarts(child: str, reason: str) -> float:
    return REGISTRY.get_sample_value("newsagg_supervisor_restarts_total", {"child": child, "reason": reason}) or 0.0


def test_a_child_that_stops_answering_healthz_is_killed_and_restarted() -> None:
    port = free_port()
    api = Child("api", [sys.executable, "-c", HANGING_API, str(port)], {}, f"http://127.0.0.1:{port}/healthz")
    policy = Policy(grace_s=1, probe_s=0.3, failures_to_restart=2, budget=3, window_s=60)
    counted = restarts("api", "unhealthy")
    api.start()
    assert api.process is not None
    first = api.process
    deadline = time.monotonic() + 60
    try:
        status = supervise([api], policy, lambda: (bool(api.restarts) and api.answered) or time.monotonic() > deadline)
    finally:
        stop_all([api], grace_s=1)
    assert status == 0
    assert len(api.restarts) == 1  # the hung one, once: the new process answered
    assert first.returncode == -signal.SIGKILL  # it ignored SIGTERM: killed after the grace period
    assert api.process is not first
    assert restarts("api", "unhealthy") == counted + 1


def test_stopping_escalates_to_sigkill_only_for_a_child_that_ignores_sigterm(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    deaf = Child("worker", [sys.executable, "-c", DEAF, str(ready)], {})
    polite = Child("api", [sys.executable, "-c", "import time; time.sleep(3600)"], {})
    deaf.start()
    polite.start()
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    stop_all([deaf, polite], grace_s=1)
    assert deaf.process is not None
    assert polite.process is not None
    assert deaf.process.returncode == -signal.SIGKILL
    assert polite.process.returncode == -signal.SIGTERM


def test_a_child_that_keeps_exiting_spends_its_budget_and_stops_everything() -> None:
    worker = Child("worker", [sys.executable, "-c", "raise SystemExit(3)"], {})
    policy = Policy(grace_s=1, probe_s=1, failures_to_restart=3, budget=2, window_s=60)
    counted = restarts("worker", "exited")
    worker.start()
    deadline = time.monotonic() + 60
    assert supervise([worker], policy, lambda: time.monotonic() > deadline) == 1
    assert len(worker.restarts) == 2
    assert restarts("worker", "exited") == counted + 2


# Answers every /healthz with 503, as the API does while PostgreSQL is down.
DEGRADED_API = """
import http.server, sys
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""


def test_an_api_that_answers_503_is_left_running() -> None:
    port = free_port()
    api = Child("api", [sys.executable, "-c", DEGRADED_API, str(port)], {}, f"http://127.0.0.1:{port}/healthz")
    policy = Policy(grace_s=1, probe_s=0.2, failures_to_restart=2, budget=3, window_s=60)
    api.start()
    rounds = iter(range(25))  # 25 rounds of the watch, one probe each (0.2 s apart): ten times what restarts a hung one

    def enough() -> bool:
        return next(rounds, None) is None

    try:
        assert supervise([api], policy, enough) == 0
    finally:
        stop_all([api], grace_s=1)
    assert api.answered
    assert not api.restarts


def test_embedded_redis_that_dies_is_started_again_on_its_port(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "redis")
    server.start()
    try:
        client = redis.Redis.from_url(server.url())
        client.set("before", "1")
        os.kill(int(server.pid_file.read_text()), signal.SIGKILL)
        supervised = Restarted("embedded Redis", server)
        deadline = time.monotonic() + 60
        status = supervise([supervised], Policy(), lambda: bool(supervised.restarts) or time.monotonic() > deadline)
        assert status == 0
        assert len(supervised.restarts) == 1
        assert server.exit_status() is None
        assert client.ping()  # same address: clients reconnect to it as they are
        assert client.get("before") is None  # derived state only: nothing was kept
        client.close()
    finally:
        server.stop()
