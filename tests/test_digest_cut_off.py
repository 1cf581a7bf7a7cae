"""A digest run cut off (the job's timeout, a slow server) keeps the outcomes of the emails it sent, and readers whose
email it did not try are not charged an attempt; the job may run as long as its last lease."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import text

from app.notifications.digest import Leased, deliver, lease, run_seconds, send_digests
from app.notifications.mailer import Mailer
from app.services import Services
from app.settings import Settings
from jobs.worker import worker_options
from tests.alerts import add_digest_entries, add_readers, count
from tests.mailboxes import Mailbox, mail_settings, smtp_server


async def _readers(services: Services, n: int) -> None:
    """`n` readers (bulk<k>@example.com, k from 1) with a due hourly digest of two stories each."""
    await add_readers(services, n, digest="hourly")
    async with services.engine.connect() as connection:
        ids = list(await connection.scalars(text("SELECT id FROM users ORDER BY id")))
    await add_digest_entries(services, ids, 2)


async def test_a_run_cut_off_mid_email_has_recorded_the_emails_it_sent(services: Services, settings: Settings) -> None:
    """Six readers; the run is cancelled (as arq cancels a job at its timeout) while the third email is accepted."""
    await _readers(services, 6)
    loop, run = asyncio.get_running_loop(), None

    async def cut_off_at_the_third() -> None:  # in the SMTP server's own thread and loop
        if len(mailbox.messages) == 2 and run is not None:
            loop.call_soon_threadsafe(run.cancel)

    mailbox = Mailbox(delay=0.05, on_data=cut_off_at_the_third)
    with smtp_server(mailbox) as port:
        run = asyncio.create_task(send_digests(services.engine, mail_settings(settings, port)))
        with pytest.raises(asyncio.CancelledError):
            await run
    assert mailbox.recipients() == ["bulk1@example.com", "bulk2@example.com", "bulk3@example.com"]
    assert await count(services, "SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 4  # the first two
    # the third, accepted as the run was cut off, waits for its lease to end (sent again: at least once)
    assert await count(services, "SELECT count(*) FROM deliveries WHERE status = 'sending' AND attempts = 1") == 2
    untried = "SELECT count(*) FROM deliveries WHERE attempts = 0 AND next_attempt_at <= now()"
    assert await count(services, untried) == 6  # the last three readers', uncharged and due


async def test_readers_whose_email_might_outlast_the_lease_are_released_uncharged(
    services: Services, settings: Settings
) -> None:
    await _readers(services, 3)
    mailbox = Mailbox()
    with smtp_server(mailbox) as port:
        mail = mail_settings(settings, port)
        leased = await lease(services.engine, mail)
        mailer = Mailer(mail)
        try:  # its lease as good as over: no email may start
            assert await deliver(services.engine, mail, mailer, Leased(leased.readers, time.monotonic())) == 0
        finally:
            await mailer.close()
        assert mailbox.messages == []
        assert await count(services, "SELECT count(*) FROM deliveries WHERE attempts = 0") == 6
        assert sorted((await lease(services.engine, mail)).readers) == sorted(leased.readers)  # claimed again at once


def test_the_digest_job_may_run_as_long_as_its_last_claim_is_leased(settings: Settings) -> None:
    crons = {job.name: job for job in worker_options(settings)["cron_jobs"]}
    assert crons["cron:send_digests_job"].timeout_s == run_seconds(settings)
    assert run_seconds(settings) > 600  # 20 readers at three 10 s timeouts each, after 50 s of claiming
