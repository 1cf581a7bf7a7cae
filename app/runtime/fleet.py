"""The processes `newsagg up` supervises: one API on the public port, or N API processes on loopback ports behind
HAProxy on it; M arq workers that crawl; K article workers that fetch article pages. All share one PostgreSQL and one
Redis."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from app.runtime.balancer import Backends, haproxy_binary, haproxy_config
from app.runtime.children import Child
from app.runtime.processes import free_port

log = logging.getLogger(__name__)
LOOPBACK = "127.0.0.1/32"  # where the balancer reaches the API processes from


@dataclass(frozen=True)
class Fleet:
    host: str
    port: int
    apis: int = 1
    workers: int = 1
    article_workers: int = 1  # processes that fetch article pages; 0: none are fetched


def children(fleet: Fleet, env: dict[str, str], home: Path, trusted: list[str]) -> list[Child]:
    """The API processes (behind a balancer when several and HAProxy is installed), then the workers."""
    apis = fleet.apis
    binary = haproxy_binary() if apis > 1 else None
    if apis > 1 and binary is None:
        log.warning("--api %d asks for a load balancer, but no haproxy is installed (apt-get install haproxy): "
                    "running one API process", apis)  # fmt: skip
        apis = 1
    if apis == 1:
        served = [_api("api", fleet.host, fleet.port, env)]
    else:
        assert binary is not None
        served = _balanced(fleet, apis, binary, _trusting_loopback(env, trusted), home)
    crawling = _numbered("worker", fleet.workers)
    fetching = _numbered("article-worker", fleet.article_workers)
    # with article workers, crawl workers leave the article queue to them; without, no page is fetched at all
    # (nothing would consume the jobs, so none are enqueued)
    crawl_env = {**env, "NEWSAGG_WORKER_FETCHES_ARTICLES": "false"} if fetching else \
        {**env, "NEWSAGG_ARTICLE_TEXT_ENABLED": "false"}  # fmt: skip
    return [*served, *(Child(name, [*_python(), "worker"], crawl_env) for name in crawling),
            *(Child(name, [*_python(), "worker", "--articles"], env) for name in fetching)]  # fmt: skip


def _numbered(name: str, count: int) -> list[str]:
    return [name] if count == 1 else [f"{name}-{i}" for i in range(1, count + 1)]


def _balanced(fleet: Fleet, apis: int, binary: str, env: dict[str, str], home: Path) -> list[Child]:
    ports = {f"api-{i}": free_port() for i in range(1, apis + 1)}
    servers = [(name, f"127.0.0.1:{port}") for name, port in ports.items()]
    config = home / "haproxy.cfg"
    config.write_text(haproxy_config(_bind(fleet.host, fleet.port), Backends(servers=servers)))
    balancer = Child("balancer", [binary, "-db", "-f", str(config)], env, _health(fleet.host, fleet.port))
    log.info("%d API processes on ports %s behind HAProxy on %s:%d",
             apis, ", ".join(map(str, ports.values())), fleet.host, fleet.port)  # fmt: skip
    return [*(_api(name, "127.0.0.1", port, env) for name, port in ports.items()), balancer]


def _api(name: str, host: str, port: int, env: dict[str, str]) -> Child:
    return Child(name, [*_python(), "api", "--host", host, "--port", str(port)], env, _health(host, port))


def _trusting_loopback(env: dict[str, str], trusted: list[str]) -> dict[str, str]:
    """The API processes believe the balancer's X-Forwarded-For (it connects from loopback), and the proxies the
    operator already trusts in front of it."""
    proxies = trusted if LOOPBACK in trusted else [*trusted, LOOPBACK]
    return {**env, "NEWSAGG_RATE_LIMIT_TRUSTED_PROXIES": json.dumps(proxies)}


def _python() -> list[str]:
    return [sys.executable, "-m", "app"]


def _bind(host: str, port: int) -> str:
    return f"{host or '*'}:{port}"  # HAProxy reads the port after the last colon, IPv6 addresses included


def _health(host: str, port: int) -> str:
    return f"http://{loopback(host)}:{port}/healthz"


def loopback(host: str) -> str:
    """Where the supervisor reaches a server bound to `host`."""
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host
