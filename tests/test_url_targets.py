"""Hostile URLs (malformed IPv6 literals, ports out of range, host labels no resolver takes) are one typed error for
every caller: sourceCreate, OPML import, the feed fetcher, page extraction, webhook endpoints and deliveries, WebSub
hubs."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select, update

from app.ingest.addresses import AddressRefused, UnusableURL, check_url_target, url_target
from app.ingest.fetch import FetchError, FetchPolicy, fetch_feed, new_http_client
from app.ingest.transport import guarded_transport
from app.notifications.webhooks import post
from app.services import Services
from app.settings import Settings
from app.sources.models import CrawlSchedule, FetchLog, Source
from app.websub.protocol import Discovery
from app.websub.service import subscribe
from tests.conftest import GraphQLClient, document
from tests.feeds import FeedServer, Reply, items, rss
from tests.newsroom import administrator, sign_up
from tests.test_article_text import fetch_one
from tests.test_ingest import add_source

Run = Callable[[], Coroutine[Any, Any, int]]
LONG_LABEL = "http://" + "a" * 64 + ".example/"
HUGE_LABEL = "http://" + "a" * 300 + ".example/"
# Malformed, every one, before any name is looked up (a storable subset: PostgreSQL text takes no NUL)
STORABLE = ["http://[::1", "http://[::1/", "http://[zz]/", "http://a.example:99999/", "http://a.example:x/", LONG_LABEL,
            HUGE_LABEL, "http://a b.example/", "http://a..example/", "http://127.0.0.1:99999/", "http://127.0.0.1:0/",
            "http://xn--zz--.example/"]  # fmt: skip
UNUSABLE = [*STORABLE, "http://a\x00b.example/", "http://a\tb.example/"]


def failures(failure: str) -> float:
    return REGISTRY.get_sample_value("newsagg_fetch_failures_total", {"fetched": "feed", "failure": failure}) or 0.0


@pytest.mark.parametrize("url", UNUSABLE)
@pytest.mark.parametrize("allow_loopback", [True, False])
async def test_a_malformed_url_is_unusable_not_a_value_error(url: str, allow_loopback: bool) -> None:
    with pytest.raises(UnusableURL, match=r"\S"):
        await check_url_target(url, allow_loopback=allow_loopback)


def test_what_httpx_encodes_outside_the_host_is_no_reason_to_refuse() -> None:
    assert url_target("http://a.example/a b?q=é") == ("a.example", 80)  # a raw space in a Location, say
    assert url_target("https://user@[::1]/") == ("::1", 443)


async def test_credentials_do_not_hide_the_host() -> None:
    with pytest.raises(AddressRefused, match="loopback") as refused:
        await check_url_target("http://user@[::1]:80/", allow_loopback=False)
    assert not isinstance(refused.value, UnusableURL)
    await check_url_target("http://user@[::1]:80/", allow_loopback=True)


@pytest.mark.parametrize("url", UNUSABLE)
async def test_the_fetcher_fails_an_unusable_url_as_a_fetch_error(url: str) -> None:
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits())) as client:
        with pytest.raises(FetchError) as caught:
            await fetch_feed(client, url, FetchPolicy(1024, 1))
    assert caught.value.error_class == "invalid_url"
    assert not caught.value.transient  # the URL stays malformed: no retry in seconds


@pytest.mark.parametrize(("location", "failure"), [("http://[::1", "protocol"), ("http://[zz]/x", "protocol"),
                                                   ("http://a.example:99999/", "invalid_url"),
                                                   (LONG_LABEL, "invalid_url")])  # fmt: skip
async def test_a_redirect_to_an_unusable_url_is_a_fetch_error(location: str, failure: str,
                                                              feed_server: FeedServer) -> None:  # fmt: skip
    """httpx reads a malformed Location as the server's protocol error; one it reads leads to an unusable URL."""
    feed_server.routes["/moved.xml"] = Reply(302, b"", {"Location": location})
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits())) as client:
        with pytest.raises(FetchError) as caught:
            await fetch_feed(client, feed_server.url("/moved.xml"), FetchPolicy(1024, 3))
    assert caught.value.error_class == failure


async def test_an_unusable_link_header_is_ignored(feed_server: FeedServer) -> None:
    links = "<http://[::1>; rel=hub, <http://[zz]/>; rel=self"
    feed_server.routes["/linked.xml"] = Reply(200, rss(items(1)), {"Link": links})
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits())) as client:
        fetched = await fetch_feed(client, feed_server.url("/linked.xml"), FetchPolicy(1 << 20, 3))
    assert (fetched.status_code, fetched.links) == (200, {})


@pytest.mark.parametrize("url", UNUSABLE)
async def test_a_webhook_delivery_to_an_unusable_url_fails_for_good(url: str) -> None:
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits())) as client:
        outcome = await post(client, url, "whsec_x", "key", b"{}", 1024, 5)
    assert (outcome.delivered, outcome.permanent) == (False, True)


async def test_a_stored_feed_url_that_is_malformed_fails_its_fetch_and_the_worker_goes_on(
    gql: GraphQLClient, services: Services, feed_server: FeedServer, crawl: Run
) -> None:
    """Given sources whose stored URLs are malformed (stored before today's checks) beside a good one,
    when the crawl runs, then each bad one fails as a logged, counted fetch failure and the good one is fetched."""
    admin = await administrator(gql, services)
    feed_server.routes["/good.xml"] = Reply(200, rss(items(2)), {"Content-Type": "application/rss+xml"})
    for n, url in enumerate(STORABLE):
        created = await add_source(admin, feed_server.url(f"/bad{n}.xml"))
        async with services.db.begin() as session:
            await session.execute(update(Source).where(Source.feed_url == created["source"]["feedUrl"])
                                  .values(feed_url=url))  # fmt: skip
    assert (await add_source(admin, feed_server.url("/good.xml")))["errors"] == []
    before = failures("invalid_url")

    await crawl()

    async with services.db() as session:
        bad_ids = list(await session.scalars(select(Source.id).where(Source.feed_url.in_(STORABLE))))
        logged = list(await session.execute(select(FetchLog.source_id, FetchLog.error_class)))
        schedules = list(await session.scalars(select(CrawlSchedule).where(CrawlSchedule.source_id.in_(bad_ids))))
    assert len(bad_ids) == len(STORABLE)
    assert sorted(error for source_id, error in logged if source_id in bad_ids) == ["invalid_url"] * len(STORABLE)
    assert [error for source_id, error in logged if source_id not in bad_ids] == [None]
    assert failures("invalid_url") == before + len(STORABLE)
    assert all(s.consecutive_failures == 1 and (s.last_error or "").startswith("invalid_url") for s in schedules)
    assert feed_server.hits["/good.xml"] == 1
    assert not any(path.startswith("/bad") for path in feed_server.hits)


@pytest.mark.parametrize("url", STORABLE)
async def test_an_article_link_that_is_malformed_is_no_page_to_fetch(
    url: str, gql: GraphQLClient, services: Services, settings: Settings, feed_server: FeedServer
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/feed.xml"] = Reply(200, rss([]), {"Content-Type": "application/rss+xml"})
    await add_source(admin, feed_server.url("/feed.xml"))

    outcome = await fetch_one(services, settings, url)

    assert (outcome.status, outcome.error_class) == ("failed", "invalid_url")


MENDED = "http://a..example/"  # normalization makes it http://a.example/, a name that does not resolve
SOURCE_REFUSALS = [(url, "INVALID_URL") for url in STORABLE if url != MENDED] + [(MENDED, "ADDRESS_REFUSED")]


@pytest.mark.parametrize(("url", "code"), SOURCE_REFUSALS)
async def test_source_create_refuses_a_malformed_url_with_its_code(gql: GraphQLClient, services: Services, url: str,
                                                                   code: str) -> None:  # fmt: skip
    admin = await administrator(gql, services)
    payload = (await admin.run("SourceCreate", input={"feedUrl": url}))["sourceCreate"]
    assert payload["source"] is None
    assert [(e["code"], e["field"]) for e in payload["errors"]] == [(code, "feedUrl")]


async def test_source_create_with_credentials_or_a_nul_in_the_host(gql: GraphQLClient, services: Services) -> None:
    admin = await administrator(gql, services)
    made = (await admin.run("SourceCreate", input={"feedUrl": "http://user@[::1]:80/"}))["sourceCreate"]
    assert (made["errors"], made["source"]["feedUrl"]) == ([], "http://[::1]/")  # loopback allowed in tests
    nul = await admin.post(document("SourceCreate"), {"input": {"feedUrl": "http://a\x00b.example/"}})
    assert [e["extensions"]["code"] for e in nul["errors"]] == ["BAD_USER_INPUT"]


async def test_an_opml_import_reports_malformed_urls(gql: GraphQLClient, services: Services) -> None:
    admin = await administrator(gql, services)
    outlines = "".join(f'<outline text="x" xmlUrl="{url}"/>' for url in STORABLE)
    opml = f'<?xml version="1.0"?><opml version="2.0"><body>{outlines}</body></opml>'
    report = (await admin.run("SourcesImport", opml=opml))["sourcesImport"]
    assert report["created"] == []
    assert sorted((e["feedUrl"], e["code"]) for e in report["errors"]) == sorted(SOURCE_REFUSALS)


@pytest.mark.parametrize(("url", "code"), [(url, "INVALID") for url in STORABLE if "\t" not in url]
                         + [("http://user@[::1]:80/", "ADDRESS_REFUSED")])  # fmt: skip
async def test_webhook_endpoint_set_refuses_a_malformed_url_with_its_code(gql: GraphQLClient, url: str,
                                                                          code: str) -> None:  # fmt: skip
    reader = gql.as_(await sign_up(gql))
    key = (await reader.post(document("ApiKeyCreate"), {"name": "app"}))["data"]["apiKeyCreate"]["apiKey"]["id"]
    refused = (await reader.run("WebhookEndpointSet", apiKeyId=key, url=url))["webhookEndpointSet"]
    assert (refused["endpoint"], refused["secret"]) == (None, None)
    assert [(e["code"], e["field"]) for e in refused["errors"]] == [(code, "url")]


@pytest.mark.parametrize("hub", ["http://[::1", "http://xn--zz--.example/", LONG_LABEL, "http://127.0.0.1:99999/"])
async def test_a_hub_at_an_unusable_url_fails_its_subscription(hub: str, gql: GraphQLClient, services: Services,
                                                               settings: Settings) -> None:  # fmt: skip
    admin = await administrator(gql, services)
    await add_source(admin, "http://127.0.0.1:9/pushed.xml")
    async with services.db() as session:
        source_id = await session.scalar(select(Source.id))
    assert source_id is not None
    public = settings.model_copy(update={"public_url": "http://127.0.0.1:9"})
    async with new_http_client(public) as http:
        state = await subscribe(services.engine, http, public, source_id, Discovery(hub, "http://127.0.0.1:9/p"))
    assert state == "failed"
    async with services.db() as session:
        assert await session.scalar(select(Source.websub_state)) == "failed"
