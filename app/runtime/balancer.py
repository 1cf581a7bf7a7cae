"""HAProxy in front of several API processes: its configuration, written by one function for `newsagg up --api N`
(API processes on loopback ports) and for docker-compose (API replicas found through Docker's DNS)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

HEADER = "# HAProxy configuration of newsagg, written by app/runtime/balancer.py: change that, not this.\n"
BACKEND_HEADER = "X-Newsagg-Backend"  # which API process answered: operators see the spread, tests check it
TUNNEL_TIMEOUT = "1h"  # a WebSocket is a tunnel: idle between the server's keep-alive pings, it lives on


@dataclass(frozen=True)
class Backends:
    """Fixed servers (name, host:port) or, for replicas behind a DNS name, `replicas` slots resolved by `resolver`."""

    servers: Sequence[tuple[str, str]] = ()
    dns_name: str = ""  # host:port of the replicas' service name
    replicas: int = 0
    resolver: str = ""  # host:port of the DNS server to ask


# Debian installs haproxy in /usr/sbin, which its PATH leaves out for every user but root
SYSTEM_BINARIES = ("/usr/local/sbin", "/usr/sbin")


def haproxy_binary() -> str | None:
    return shutil.which("haproxy", path=os.pathsep.join([os.environ.get("PATH", os.defpath), *SYSTEM_BINARIES]))


def haproxy_config(bind: str, backends: Backends, *, public_metrics: bool = True) -> str:
    """HTTP and WebSocket (graphql-transport-ws) balanced round robin; a process is taken out when /healthz goes
    unanswered and a request it refused is sent to another; X-Forwarded-For names the client. Without
    `public_metrics`, /metrics is answered 404 at the balancer (scrape the API processes on their own network)."""
    front = _frontend(bind, public_metrics)
    return HEADER + "\n".join([*_global_and_defaults(), *_resolvers(backends), *front, *_backend(backends)])


def _global_and_defaults() -> list[str]:
    return [
        "global",
        "    maxconn 4096",
        "    log stderr format raw local0 notice  # servers going down and up; no line per request",
        "",
        "defaults",
        "    mode http",
        "    log global",
        "    option forwardfor  # the API trusts it from the balancer only (NEWSAGG_RATE_LIMIT_TRUSTED_PROXIES)",
        "    timeout connect 5s",
        "    timeout http-request 15s",
        "    timeout client 65s",
        "    timeout server 65s",
        f"    timeout tunnel {TUNNEL_TIMEOUT}",
        "    timeout client-fin 5s",
        "    retries 3",
        "    option redispatch 1  # each retry goes to another API process",
        # a request the process never received (refused connection) is safe to send again; one it may have run is
        # sent again only when it is a GET (queries), never a POST that may be a mutation
        "    retry-on conn-failure empty-response",
        "",
    ]


def _resolvers(backends: Backends) -> list[str]:
    if not backends.resolver:
        return []
    return ["resolvers dns", f"    nameserver dns {backends.resolver}", "    hold valid 5s", ""]


def _frontend(bind: str, public_metrics: bool) -> list[str]:
    # decoded first, as the API decodes it: /%6detrics is /metrics to uvicorn
    hidden = [] if public_metrics else ["    http-request deny deny_status 404 if { path,url_dec /metrics }"]
    return ["frontend api", f"    bind {bind}", *hidden, "    http-request disable-l7-retry if METH_POST",
            "    default_backend api", ""]  # fmt: skip


def _backend(backends: Backends) -> list[str]:
    lines = [
        "backend api",
        "    balance roundrobin",
        "    option httpchk GET /healthz",
        # 503 says PostgreSQL is down, which no other API process would mend: the API still answers (masked errors)
        "    http-check expect rstatus ^(200|503)$",
        f"    http-response set-header {BACKEND_HEADER} %[srv_name]",
        "    default-server inter 2s fastinter 500ms fall 2 rise 1 observe layer4 error-limit 1 on-error mark-down",
    ]
    lines += [f"    server {name} {address} check" for name, address in backends.servers]
    if backends.replicas:
        lines.append(f"    server-template api- 1-{backends.replicas} {backends.dns_name} check resolvers dns "
                     "init-addr none")  # fmt: skip
    return [*lines, ""]


def compose_config() -> str:
    """The configuration of docker-compose.yml's balancer service (deploy/haproxy.cfg): up to 8 replicas of the
    `api` service, found through Docker's embedded DNS."""
    written = "# docker-compose.yml's balancer; rewrite with: python -m app.runtime.balancer > deploy/haproxy.cfg\n"
    replicas = Backends(dns_name="api:8000", replicas=8, resolver="127.0.0.11:53")
    return written + haproxy_config("*:8000", replicas, public_metrics=False)


if __name__ == "__main__":
    print(compose_config(), end="")
