"""A publisher's Retry-After and <ttl> as a hostile server sends them: the year 9999, 400 digits, a superscript
digit. Each is capped or ignored; none crashes the refresh."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.services import Services
from app.settings import Settings
from tests.feeds import FeedServer, Reply, items, rss
from tests.test_fetching import Crawl, add, articles, log_of, schedule_of

HOSTILE_RETRY_AFTER = ["Fri, 31 Dec 9999 23:59:59 GMT", "9" * 400, "\u00b2"]  # "²" goes out as the byte 0xB2


@pytest.mark.parametrize("status", [404, 500])
@pytest.mark.parametrize("retry_after", HOSTILE_RETRY_AFTER)
async def test_a_failure_waits_no_longer_than_the_hint_cap(
    status: int, retry_after: str, services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    # given a feed that fails with a Retry-After no one should honour in full
    feed_server.routes["/failing.xml"] = Reply(status, b"", {"Retry-After": retry_after})
    source_id = await add(services, settings, feed_server.url("/failing.xml"))
    # when it is crawled
    await crawl()
    # then the failure is recorded, and the next crawl is within the cap on publisher hints
    schedule = await schedule_of(services, source_id)
    assert schedule.consecutive_failures == 1
    assert schedule.next_crawl_at <= datetime.now(UTC) + timedelta(hours=settings.crawl_hint_max_hours)
    assert {entry.status_code for entry in await log_of(services)} == {status}


@pytest.mark.parametrize("retry_after", HOSTILE_RETRY_AFTER)
async def test_a_feed_with_a_hostile_retry_after_is_stored(
    retry_after: str, services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    feed_server.routes["/ok.xml"] = Reply(200, rss(items(3)), {"Retry-After": retry_after})
    source_id = await add(services, settings, feed_server.url("/ok.xml"))
    await crawl()
    assert await articles(services) == 3
    schedule = await schedule_of(services, source_id)
    assert schedule.next_crawl_at <= datetime.now(UTC) + timedelta(hours=settings.crawl_hint_max_hours)


@pytest.mark.parametrize("ttl", ["\u00b2", "9" * 5000])
async def test_a_feed_with_a_hostile_ttl_is_stored(
    ttl: str, services: Services, settings: Settings, feed_server: FeedServer, crawl: Crawl
) -> None:
    feed = rss(items(2)).replace(b"<description>d</description>", f"<ttl>{ttl}</ttl>".encode())
    feed_server.routes["/ttl.xml"] = Reply(200, feed)
    await add(services, settings, feed_server.url("/ttl.xml"))
    await crawl()
    assert await articles(services) == 2
