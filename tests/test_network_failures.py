"""How fetches fail, told apart and counted: DNS, connect, TLS, timeout; a robots.txt that cannot be fetched is
never reported as one that disallows."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select

from app.ingest.fetch import FetchError, FetchPolicy, fetch_feed
from app.ingest.politeness import Politeness
from app.ingest.refresh import refresh_source
from app.ingest.transport import guarded_transport
from app.services import Services
from app.settings import Settings
from app.sources.models import CrawlSchedule, FetchLog
from app.sources.service import SourceRequest, create_source
from tests.feeds import FeedServer, Reply, items, rss

UNRESOLVABLE = "http://feeds.newsagg-test.invalid/rss.xml"  # .invalid never resolves (RFC 2606)


@pytest.fixture
async def http() -> Any:
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits()),
                                 timeout=5) as client:  # fmt: skip
        yield client


def failures(fetched: str, failure: str) -> float:
    return REGISTRY.get_sample_value("newsagg_fetch_failures_total", {"fetched": fetched, "failure": failure}) or 0.0


async def failure_of(http: httpx.AsyncClient, url: str) -> str:
    with pytest.raises(FetchError) as raised:
        await fetch_feed(http, url, FetchPolicy(1024, 1))
    return raised.value.error_class


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens there once the probe is closed


async def test_each_network_failure_has_its_class(feed_server: FeedServer, http: Any) -> None:
    feed_server.routes["/feed.xml"] = Reply(200, rss(items(1)))
    assert await failure_of(http, UNRESOLVABLE) == "dns"
    assert await failure_of(http, f"http://127.0.0.1:{closed_port()}/feed.xml") == "connect"
    assert await failure_of(http, feed_server.url("/feed.xml").replace("http:", "https:")) == "tls"  # no TLS there


async def test_a_host_that_does_not_resolve_fails_as_dns_not_as_robots_disallowed(
    services: Services, settings: Settings, http: Any
) -> None:
    async with services.db.begin() as session:
        source = await create_source(session, settings, SourceRequest(feed_url=UNRESOLVABLE), resolve=False)
    robots_before, feed_before = failures("robots", "dns"), failures("feed", "dns")
    outcome = await refresh_source(services.engine, http, settings, source.id,
                                   politeness=Politeness(services.redis, http, settings))  # fmt: skip
    assert (outcome.status, outcome.error_class) == ("failed", "dns")
    async with services.db() as session:
        logged = (await session.scalars(select(FetchLog.error_class))).all()
        schedule = await session.get(CrawlSchedule, source.id)
    assert logged == ["dns"]
    assert schedule is not None
    assert schedule.last_error is not None
    assert schedule.last_error.startswith("dns: robots.txt unavailable")
    assert failures("robots", "dns") == robots_before + 1
    assert failures("feed", "dns") == feed_before + 1


async def test_a_robots_txt_answering_5xx_is_unavailable_not_disallowing(
    services: Services, settings: Settings, feed_server: FeedServer, http: Any
) -> None:
    feed_server.routes["/robots.txt"] = Reply(500, b"")
    admission = await Politeness(services.redis, http, settings).admit(feed_server.url("/feed.xml"))
    assert not admission.allowed
    assert admission.error_class == "robots_unavailable"
    assert admission.reason is not None
    assert "HTTP 500" in admission.reason
