"""Email digests through a real SMTP server on loopback (aiosmtpd): one email per reader with every entry due."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text

from app.notifications.digest import send_digests
from app.notifications.fanout import fan_out
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from tests.alerts import add_reader, count
from tests.mailboxes import Mailbox, parts, smtp_server
from tests.newsroom import add_breaking_event

EMAIL_DELIVERED = ("newsagg_alert_deliveries_total", {"channel": "email", "outcome": "delivered"})


def _metric(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    mailbox = Mailbox()
    with smtp_server(mailbox) as port:
        yield mailbox, port


async def test_an_hourly_digest_lists_the_hours_stories_in_one_email(services: Services, settings: Settings,
                                                                     smtp: tuple[Mailbox, int]) -> None:  # fmt: skip
    mailbox, port = smtp
    mail = settings.model_copy(update={"smtp_host": "127.0.0.1", "smtp_port": port, "smtp_tls": "none"})
    await add_reader(services, "digest@example.com", digest="hourly", cap_per_hour=1)
    await add_reader(services, "nodigest@example.com")
    for story in (31, 32, 33):
        await add_breaking_event(services, story)
    await fan_out(services.engine, mail)
    async with services.engine.connect() as connection:
        due = await connection.scalar(text("SELECT min(next_attempt_at) FROM deliveries WHERE channel = 'email'"))
    assert due > datetime.now(UTC)  # the digest waits for the top of the next hour
    assert due - datetime.now(UTC) <= timedelta(hours=1)
    assert await send_digests(services.engine, mail) == 0  # nothing is due yet
    async with services.engine.begin() as connection:  # the hour passes
        await connection.execute(text("UPDATE deliveries SET next_attempt_at = now() WHERE channel = 'email'"))
    sent, delivered = _metric("newsagg_alert_digest_emails_sent_total"), _metric(*EMAIL_DELIVERED)
    assert await send_digests(services.engine, mail) == 1
    assert (_metric("newsagg_alert_digest_emails_sent_total") - sent, _metric(*EMAIL_DELIVERED) - delivered) == (1, 3)
    [(recipients, message, _)] = mailbox.messages
    assert recipients == ["digest@example.com"]
    assert message["Subject"] == "newsagg: 3 stories for you"
    body, _ = parts(message)
    assert ["Story 31" in body, "Story 32" in body, "Story 33" in body] == [True, True, True]
    assert await count(services, "SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 3
    assert await send_digests(services.engine, mail) == 0  # sent once


async def test_an_smtp_server_that_is_down_leaves_the_digest_for_a_retry(services: Services,
                                                                         settings: Settings) -> None:  # fmt: skip
    mail = settings.model_copy(update={"smtp_host": "127.0.0.1", "smtp_port": free_port(), "smtp_tls": "none"})
    await add_reader(services, "digest@example.com", digest="daily")
    await add_breaking_event(services, 41)
    await fan_out(services.engine, mail)
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE deliveries SET next_attempt_at = now()"))
    failed = _metric("newsagg_alert_deliveries_total", {"channel": "email", "outcome": "failed"})
    assert await send_digests(services.engine, mail) == 0
    assert _metric("newsagg_alert_deliveries_total", {"channel": "email", "outcome": "failed"}) - failed == 1
    async with services.engine.connect() as connection:
        row = (await connection.execute(text("SELECT status, attempts, last_error FROM deliveries"))).one()
    assert (row.status, row.attempts) == ("failed", 1)
    assert "Connection" in row.last_error or "refused" in row.last_error.lower()
