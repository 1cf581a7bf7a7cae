"""The balancer's configuration, as `newsagg up --api N` writes it and as docker-compose's balancer service reads it
(deploy/haproxy.cfg), checked by HAProxy itself; and `up` without HAProxy runs one API process."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import re
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml

from app.runtime.balancer import Backends, compose_config, haproxy_binary, haproxy_config
from app.runtime.fleet import Fleet, children
from app.runtime.processes import free_port
from tests.conftest import REPO

needs_haproxy = pytest.mark.skipif(haproxy_binary() is None, reason="no haproxy binary (apt-get install haproxy)")


def test_the_committed_compose_configuration_is_the_one_the_code_writes() -> None:
    committed = (REPO / "deploy" / "haproxy.cfg").read_text()
    assert committed == compose_config(), "deploy/haproxy.cfg is stale: see its first line for how to write it"


@needs_haproxy
@pytest.mark.parametrize("form", ["up", "compose"])
def test_haproxy_accepts_both_configurations(form: str, tmp_path: Path) -> None:
    servers = Backends(servers=[("api-1", "127.0.0.1:18001"), ("api-2", "127.0.0.1:18002")])
    text = haproxy_config("127.0.0.1:18000", servers) if form == "up" else compose_config()
    (tmp_path / "haproxy.cfg").write_text(text)
    checked = subprocess.run([str(haproxy_binary()), "-c", "-f", str(tmp_path / "haproxy.cfg")], capture_output=True)
    assert checked.returncode == 0, checked.stderr.decode()


@needs_haproxy
def test_api_processes_behind_the_balancer_trust_it_and_the_operators_proxies(tmp_path: Path) -> None:
    fleet = children(Fleet("0.0.0.0", 8000, apis=3, workers=2, article_workers=2), {}, tmp_path, ["10.0.0.0/8"])
    assert [child.name for child in fleet] == ["api-1", "api-2", "api-3", "balancer", "worker-1", "worker-2",
                                               "article-worker-1", "article-worker-2"]  # fmt: skip
    for crawling in fleet[4:6]:  # they leave article pages to the article workers
        assert crawling.command[-1] == "worker"
        assert crawling.env["NEWSAGG_WORKER_FETCHES_ARTICLES"] == "false"
    for fetching in fleet[6:]:
        assert fetching.command[-2:] == ["worker", "--articles"]
        assert "NEWSAGG_WORKER_FETCHES_ARTICLES" not in fetching.env
    for api in fleet[:3]:
        assert json.loads(api.env["NEWSAGG_RATE_LIMIT_TRUSTED_PROXIES"]) == ["10.0.0.0/8", "127.0.0.1/32"]
        assert api.command[-4:-2] == ["--host", "127.0.0.1"]
    assert "bind 0.0.0.0:8000" in (tmp_path / "haproxy.cfg").read_text()


def test_without_haproxy_one_api_process_serves_and_the_log_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no haproxy on it
    monkeypatch.setattr("app.runtime.balancer.SYSTEM_BINARIES", ())
    with caplog.at_level(logging.WARNING):
        fleet = children(Fleet("127.0.0.1", 8000, apis=4, workers=1, article_workers=0), {}, tmp_path, [])
    assert [child.name for child in fleet] == ["api", "worker"]
    assert fleet[1].env["NEWSAGG_ARTICLE_TEXT_ENABLED"] == "false"  # no article worker: no page job is enqueued
    assert fleet[0].command[-4:] == ["--host", "127.0.0.1", "--port", "8000"]
    assert "no haproxy is installed" in caplog.text


@pytest.mark.skipif(not Path("/usr/sbin/haproxy").exists(), reason="no haproxy in /usr/sbin (apt-get install haproxy)")
def test_haproxy_in_usr_sbin_is_found_from_a_users_path_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")  # Debian's PATH for users other than root
    assert haproxy_binary() == "/usr/sbin/haproxy"


def test_compose_api_believes_x_forwarded_for_from_the_balancers_own_address_only() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    trusted = compose["x-newsagg"]["environment"]["NEWSAGG_RATE_LIMIT_TRUSTED_PROXIES"]
    default = re.fullmatch(r"\$\{NEWSAGG_RATE_LIMIT_TRUSTED_PROXIES:-(.*)\}", trusted)
    assert default is not None, trusted  # the operator adds a TLS proxy in .env
    balancer = compose["services"]["balancer"]["networks"]["default"]["ipv4_address"]
    assert json.loads(default.group(1)) == [f"{balancer}/32"]
    (network,) = compose["networks"]["default"]["ipam"]["config"]
    assert ipaddress.ip_address(balancer) in ipaddress.ip_network(network["subnet"])
    assert ipaddress.ip_address(balancer) not in ipaddress.ip_network(network["ip_range"])  # never given to another


@needs_haproxy
async def test_the_compose_balancer_answers_metrics_404_however_the_path_is_spelt(api_url: str, tmp_path: Path) -> None:
    """Given the API (which decodes /%6detrics to /metrics and serves it) behind a balancer configured as
    docker-compose's, when /metrics is asked through the balancer spelt plainly or percent-encoded, then 404 each."""
    port, config = free_port(), tmp_path / "haproxy.cfg"
    config.write_text(haproxy_config(f"127.0.0.1:{port}", Backends(servers=[("api-1", api_url.removeprefix("http://"))]),
                                     public_metrics=False))  # fmt: skip
    balancer = await asyncio.create_subprocess_exec(str(haproxy_binary()), "-db", "-f", str(config),
                                                    stderr=asyncio.subprocess.DEVNULL)  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            assert (await client.get(f"{api_url}/%6detrics")).status_code == 200  # the API itself serves it
            assert await _answering(client)
            spellings = ("/metrics", "/%6detrics", "/%6D%65trics", "/metrics?format=text")
            statuses = {path: (await client.get(path)).status_code for path in spellings}
    finally:
        balancer.terminate()
        await balancer.wait()
    assert statuses == dict.fromkeys(spellings, 404)


async def _answering(client: httpx.AsyncClient) -> bool:
    """Whether the balancer answers /healthz within ten seconds of its start."""
    for _ in range(100):
        with contextlib.suppress(httpx.TransportError):
            if (await client.get("/healthz")).status_code == 200:
                return True
        await asyncio.sleep(0.1)
    return False
