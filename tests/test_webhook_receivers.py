"""Webhook delivery against hostile receivers on a real loopback server: one that stalls or drips its headers times
out within the deadline and is retried, without holding up other readers' deliveries; one that drips or floods its
body after a 200 is delivered and read only up to the cap; a redirect is not followed; 200 endpoints, a quarter of
them stalling, are delivered with no more POSTs in flight than the concurrency cap."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text

from app.notifications.delivery import DeliveryReport, deliver_webhooks
from app.notifications.fanout import fan_out
from app.notifications.webhooks import webhook_client
from app.services import Services
from app.settings import Settings
from tests.alerts import add_hooked_readers
from tests.hostile_receivers import HostileReceiver, hostile_receiver
from tests.newsroom import add_breaking_event

HANG_GUARD_SECONDS = 60  # a run that never ends fails here instead of hanging the suite


@pytest.fixture
def hook_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhooks_allow_loopback": True, "webhook_timeout_seconds": 2,
                                       "notify_backoff_base_seconds": 0.01, "notify_backoff_cap_seconds": 0.05,
                                       "notify_max_attempts": 4})  # fmt: skip


@pytest.fixture
async def hostile() -> AsyncIterator[HostileReceiver]:
    async with hostile_receiver() as receiver:
        yield receiver


async def _alerting(services: Services, settings: Settings, urls: list[str]) -> None:
    """One reader per URL, each with a webhook endpoint there, and a breaking story for them all."""
    await add_hooked_readers(services, urls)
    await add_breaking_event(services, 31)
    assert (await fan_out(services.engine, settings)).webhooks == len(urls)


async def _run(services: Services, settings: Settings) -> DeliveryReport:
    async with webhook_client(settings) as client:
        return await asyncio.wait_for(deliver_webhooks(services.engine, client, settings), HANG_GUARD_SECONDS)


async def _deliveries(services: Services) -> dict[str, Any]:
    """Each delivery by its endpoint's path."""
    async with services.engine.connect() as connection:
        rows = await connection.execute(text("""
            SELECT regexp_replace(e.url, '^http://[^/]+', '') AS path, d.status, d.attempts, d.last_error,
                   d.idempotency_key, (SELECT max(status_code) FROM delivery_log l WHERE l.delivery_id = d.id) AS code
            FROM deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id"""))  # fmt: skip
        return {row.path: row for row in rows}


async def test_a_stalling_or_dripping_receiver_times_out_is_retried_and_holds_up_nobody(
    services: Services, hook_settings: Settings, hostile: HostileReceiver
) -> None:
    good = [f"{hostile.url}/ok/{n}" for n in range(20)]
    await _alerting(services, hook_settings, [f"{hostile.url}/stall/1", f"{hostile.url}/drip_headers/1", *good])
    report = await _run(services, hook_settings)
    rows = await _deliveries(services)
    assert (report.delivered, report.failed, report.dead) == (20, 2, 0), [r.last_error for r in rows.values()]
    assert sorted(hostile.keys("/ok")) == sorted(rows[f"/ok/{n}"].idempotency_key for n in range(20))
    for path in ("/stall/1", "/drip_headers/1"):
        assert (rows[path].status, rows[path].attempts) == ("failed", 1)
        assert rows[path].last_error == "timed out: no status and headers within 2 s"
    while (await _deliveries(services))["/stall/1"].attempts < 2:  # retried once its back-off is over
        await _run(services, hook_settings)
    assert hostile.keys("/stall") == [rows["/stall/1"].idempotency_key] * 2  # the same key on the retry
    assert len(hostile.keys("/ok")) == 20  # and nobody else's delivery was sent again


async def test_a_body_dripped_or_flooded_after_a_200_is_delivered_and_read_only_to_the_cap(
    services: Services, hook_settings: Settings, hostile: HostileReceiver
) -> None:
    await _alerting(services, hook_settings, [f"{hostile.url}/drip_body/1", f"{hostile.url}/flood/1"])
    report = await _run(services, hook_settings)
    assert (report.delivered, report.failed) == (2, 0)
    rows = await _deliveries(services)
    assert [(rows[p].status, rows[p].code) for p in ("/drip_body/1", "/flood/1")] == [("delivered", 200)] * 2
    # the drip was left at the deadline (a 64 KiB read at its pace would take 55 minutes) ...
    assert hostile.sent["/drip_body/1"] < 1000
    # ... and of the 100 MB flood, what the sockets buffer beyond the 64 KiB read at most
    assert hostile.sent["/flood/1"] < 20_000_000


async def test_a_redirect_to_an_internal_address_is_not_followed(
    services: Services, hook_settings: Settings, hostile: HostileReceiver
) -> None:
    await _alerting(services, hook_settings, [f"{hostile.url}/redirect/1"])
    report = await _run(services, hook_settings)
    assert (report.delivered, report.failed) == (0, 1)
    row = (await _deliveries(services))["/redirect/1"]
    assert (row.status, row.code) == ("failed", 302)
    assert row.last_error == f"HTTP 302: redirect to {hostile.url}/internal/admin not followed (an endpoint must " \
                             "answer itself)"  # fmt: skip
    assert hostile.keys("/internal") == []


async def test_two_hundred_endpoints_a_quarter_stalling_are_served_within_the_concurrency_cap(
    services: Services, hook_settings: Settings, hostile: HostileReceiver
) -> None:
    settings = hook_settings.model_copy(update={"webhook_concurrency": 25})
    paths = [f"/stall/{n}" if n % 4 == 0 else f"/ok/{n}" for n in range(200)]
    await _alerting(services, settings, [hostile.url + path for path in paths])
    started = time.perf_counter()
    report = await _run(services, settings)
    print(f"\n200 endpoints, 50 stalling, concurrency 25, timeout 2 s: {time.perf_counter() - started:.1f} s, "
          f"{hostile.most_in_flight} POSTs in flight at most")  # fmt: skip
    assert (report.delivered, report.failed) == (150, 50)
    rows = await _deliveries(services)
    assert sorted(hostile.keys("/ok")) == sorted(rows[p].idempotency_key for p in paths if p.startswith("/ok"))
    assert {rows[p].status for p in paths if p.startswith("/stall")} == {"failed"}
    assert 1 < hostile.most_in_flight <= 25
