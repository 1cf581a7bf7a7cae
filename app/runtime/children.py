"""The children of `newsagg up` (API, worker, embedded Redis): watched, restarted within a budget when one exits or
its /healthz stops answering, and stopped with SIGTERM, then SIGKILL once the grace period is over."""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import httpx

from app.resilience.metrics import CHILD_RESTARTS
from app.runtime.processes import child_setup
from app.settings import Settings

log = logging.getLogger(__name__)

STARTUP_S = 60.0  # a child that never answered /healthz yet gets this long before unanswered probes count


@dataclass(frozen=True)
class Policy:
    grace_s: float = 20
    probe_s: float = 5
    failures_to_restart: int = 3
    budget: int = 5  # restarts of one child ...
    window_s: float = 300  # ... within this window; one more failure stops everything

    @classmethod
    def from_settings(cls, settings: Settings) -> Policy:
        return cls(settings.stop_grace_seconds, settings.health_probe_seconds, settings.health_failures_to_restart,
                   settings.restart_budget, settings.restart_window_seconds)  # fmt: skip


@dataclass
class Child:
    name: str
    command: list[str]
    env: dict[str, str]
    health_url: str | None = None  # probed when given
    process: subprocess.Popen[bytes] | None = None
    restarts: deque[float] = field(default_factory=deque)
    answered: bool = False
    unanswered: int = 0
    started_at: float = 0.0
    next_probe: float = 0.0

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, env=self.env, stdin=subprocess.DEVNULL,
                                        preexec_fn=child_setup(signal.SIGTERM))  # fmt: skip
        self.started_at = self.next_probe = time.monotonic()
        self.answered, self.unanswered = False, 0

    def exit_status(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def reap(self, deadline: float) -> None:
        """Waits for the exit until `deadline` (monotonic), then kills it."""
        if self.process is None:
            return
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("%s (pid %d) ignored SIGTERM for its grace period: SIGKILL", self.name, self.process.pid)
            self.process.kill()
            self.process.wait(10)

    def probe(self, policy: Policy, now: float) -> bool:
        """Asks /healthz when due; False once it went unanswered (no answer within `probe_s`) `failures_to_restart`
        times in a row, counted from its first answer, or after STARTUP_S."""
        if self.health_url is None or now < self.next_probe:
            return True
        self.next_probe = now + policy.probe_s
        try:  # any answer will do: a 503 says PostgreSQL is down, which a restart would not mend
            ok = httpx.get(self.health_url, timeout=policy.probe_s).status_code > 0
        except httpx.HTTPError:
            ok = False
        self.answered = self.answered or ok
        self.unanswered = 0 if ok else self.unanswered + 1
        counting = self.answered or now - self.started_at > STARTUP_S
        return not counting or self.unanswered < policy.failures_to_restart


class EmbeddedServer(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def exit_status(self) -> int | None: ...


@dataclass
class Restarted:
    """An embedded server restarted in place (same port, same folder) when it exits: embedded Redis, which holds
    only derived state, so its children reconnect to it and carry on. Stopping it is its owner's business."""

    name: str
    server: EmbeddedServer
    restarts: deque[float] = field(default_factory=deque)

    def start(self) -> None:
        self.server.start()

    def exit_status(self) -> int | None:
        return self.server.exit_status()

    def terminate(self) -> None:
        pass

    def reap(self, deadline: float) -> None:
        self.server.stop()

    def probe(self, policy: Policy, now: float) -> bool:
        return True


Supervised = Child | Restarted


def stop_all(children: Sequence[Supervised], grace_s: float) -> None:
    """SIGTERM to every child at once, then each is waited for until the common grace period ends, then killed."""
    for child in children:
        child.terminate()
    deadline = time.monotonic() + grace_s
    for child in children:
        child.reap(deadline)


def restart(child: Supervised, policy: Policy, why: tuple[str, str], now: float) -> bool:
    """Restarts `child` unless its budget is spent (False: the caller stops everything); `why` is (exited or
    unhealthy, what happened)."""
    kind, reason = why
    while child.restarts and now - child.restarts[0] > policy.window_s:
        child.restarts.popleft()
    if len(child.restarts) >= policy.budget:
        log.error("%s %s again: %d restarts within %.0f s already, stopping everything",
                  child.name, reason, len(child.restarts), policy.window_s)  # fmt: skip
        return False
    log.warning("%s %s: restarting it (%d of %d within %.0f s)",
                child.name, reason, len(child.restarts) + 1, policy.budget, policy.window_s)  # fmt: skip
    stop_all([child], policy.grace_s)
    child.restarts.append(now)
    CHILD_RESTARTS.labels(child.name, kind).inc()
    child.start()
    return True


def supervise(
    children: Sequence[Supervised],
    policy: Policy,
    stopping: Callable[[], bool],
    others: Callable[[], dict[str, int | None]] = dict,
    started: Callable[[], None] = lambda: None,
) -> int:
    """Until `stopping()`: restarts a child (or server) that exited or stopped answering, then calls `started`; 1 when
    a budget is spent or one of `others` (servers that are not restarted: name -> exit status) exited, 0 when asked
    to stop."""
    while not stopping():
        now = time.monotonic()
        for name, status in others().items():
            if status is not None:
                log.error("%s exited with status %s: stopping everything", name, status)
                return 1
        for child in children:
            status = child.exit_status()
            why = ("exited", f"exited with status {status}") if status is not None else None
            if why is None and not child.probe(policy, now):
                why = ("unhealthy", f"left /healthz unanswered {policy.failures_to_restart} times in a row")
            if why is not None:
                if not restart(child, policy, why, now):
                    return 1
                started()
        with contextlib.suppress(InterruptedError):
            time.sleep(0.2)
    return 0
