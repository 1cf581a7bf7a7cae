"""PostgreSQL gone for ten seconds under the alert jobs: a fan-out cut off mid-event and a digest run cut off after
its first email went out but before it was recorded (the run stops there: it sends no email it cannot record). Each
run ends at once, says so in a warning and is counted (`newsagg_database_unreachable_job_retries_total`; the next run
on its schedule tries again), and once PostgreSQL is back every in-app notification and digest entry is written
exactly once, and every digest is sent at least once: the one sent again carries the same Message-ID.

PostgreSQL here is a server of the test's own behind a TCP proxy that can be cut, so nobody else loses it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.notifications.digest import send_digests
from app.notifications.fanout import fan_out
from app.services import Services
from app.settings import Settings
from jobs.notifications import fan_out_job, send_digests_job
from tests.alerts import add_breaking_events, add_digest_entries, add_readers
from tests.mailboxes import Mailbox, mail_settings, smtp_server
from tests.test_ingest_outages import CutProxy, own_postgres, scalar

OUTAGE_SECONDS = 10
READERS, EVENTS = 2000, 4


@contextlib.asynccontextmanager
async def behind_proxy(settings: Settings, **more: Any) -> AsyncIterator[tuple[Services, CutProxy, AsyncEngine]]:
    """Services on a PostgreSQL of their own reached through a cuttable proxy, and an engine straight to it."""
    async with own_postgres() as pg:
        proxy = CutProxy(pg.port)
        await proxy.start()
        through = pg.url().replace(f":{pg.port}/", f":{proxy.port}/")
        own, direct = Services.open(settings.model_copy(update={"database_url": through, **more})), None
        try:
            direct = create_async_engine(pg.url())
            yield own, proxy, direct
        finally:
            await own.close()
            if direct is not None:
                await direct.dispose()
            with contextlib.suppress(AssertionError, RuntimeError):
                await proxy.cut()


def _unreachable() -> float:
    return REGISTRY.get_sample_value("newsagg_database_unreachable_job_retries_total") or 0.0


async def _fails_on_postgresql(job: Callable[..., Any], ctx: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    """The run ends at once, having done nothing it could record, and says why in a warning."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jobs.notifications"):
        assert await job(ctx) == 0
    assert any("PostgreSQL unreachable" in message for message in caplog.messages), caplog.messages


async def _while_away(job: Callable[..., Any], ctx: dict[str, Any], caplog: pytest.LogCaptureFixture) -> int:
    """The job run every half second while PostgreSQL stays away; how many runs (each failed)."""
    runs, back = 0, time.monotonic() + OUTAGE_SECONDS
    while time.monotonic() < back:
        await _fails_on_postgresql(job, ctx, caplog)
        runs += 1
        await asyncio.sleep(0.5)
    return runs


def _cut_at_batch(engine: AsyncEngine, proxy: CutProxy, batch: int) -> list[asyncio.Task[None]]:
    """PostgreSQL vanishes while the fan-out's `batch`th statement is in flight."""
    seen, cuts = [0], []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen[0] += "INSERT INTO notifications" in statement
        if seen[0] == batch and not cuts:
            cuts.append(asyncio.get_running_loop().create_task(proxy.cut()))

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    return cuts


async def test_a_fan_out_cut_off_by_postgresql_writes_every_notification_once_when_it_is_back(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    async with behind_proxy(settings, notify_batch=250) as (own, proxy, direct):
        await add_readers(own, READERS, digest="hourly", cap_per_hour=100)
        await add_breaking_events(own, EVENTS)
        ctx, job, failed = {"services": own}, fan_out_job, _unreachable()
        cuts = _cut_at_batch(own.engine, proxy, 3)
        # when PostgreSQL vanishes during the third batch, and stays away ten seconds
        await _fails_on_postgresql(job, ctx, caplog)
        await cuts[0]
        written = await scalar(direct, text("SELECT count(*) FROM notifications"))
        runs = await _while_away(job, ctx, caplog)
        assert _unreachable() - failed == 1 + runs  # each run failed, counted
        await proxy.start()
        while (await fan_out(own.engine, own.settings)).batches:
            pass
        # then every reader has each event once, in-app and in the digest
        total = READERS * EVENTS
        assert 0 < written < total
        for sql in ("SELECT count(*) FROM notifications",
                    "SELECT count(DISTINCT (user_id, event_id)) FROM notifications",
                    "SELECT count(*) FROM deliveries WHERE channel = 'email'",
                    "SELECT count(DISTINCT (user_id, event_id)) FROM deliveries WHERE channel = 'email'"):  # fmt: skip
            assert await scalar(direct, text(sql)) == total, sql
        assert await scalar(direct, text("SELECT count(*) FROM notification_fanouts WHERE status = 'done'")) == EVENTS
    print(f"\nfan-out: {written:,} of {total:,} notifications written when PostgreSQL went; {runs} runs failed while "
          "it was away; all written once after")  # fmt: skip


async def test_digests_sent_before_postgresql_went_away_are_sent_again_with_their_message_id(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    loop, cut = asyncio.get_running_loop(), []

    async def cut_once() -> None:  # in the SMTP server's thread: the first email is accepted as PostgreSQL goes
        if not cut:
            cut.append(True)
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(proxy.cut(), loop))

    mailbox = Mailbox(on_data=cut_once)
    with smtp_server(mailbox) as port:
        async with behind_proxy(mail_settings(settings, port)) as (own, proxy, direct):
            await add_readers(own, 2, digest="daily")
            await add_digest_entries(own, [1, 2], 3)
            ctx, job, failed = {"services": own}, send_digests_job, _unreachable()
            await _fails_on_postgresql(job, ctx, caplog)  # the first email went out unrecorded; the run stopped there
            assert len(mailbox.messages) == 1
            runs = await _while_away(job, ctx, caplog)
            assert _unreachable() - failed == 1 + runs
            await proxy.start()
            assert await send_digests(own.engine, own.settings) == 0  # still leased: not sent again before it ends
            async with direct.begin() as connection:  # the lease ends
                await connection.execute(text("UPDATE deliveries SET next_attempt_at = now()"))
            assert await send_digests(own.engine, own.settings) == 2  # the first again (at least once), the second
            assert await send_digests(own.engine, own.settings) == 0
            assert await scalar(direct, text("SELECT count(*) FROM deliveries WHERE status = 'delivered'")) == 6
            print(f"\ndigests: 1 sent before PostgreSQL went, {runs} runs failed while it was away, 2 sent after")
    ids: dict[str, list[str]] = {}
    for recipients, message, _ in mailbox.messages:
        ids.setdefault(recipients[0], []).append(message["Message-ID"])
    assert sorted(ids) == ["bulk1@example.com", "bulk2@example.com"]
    first, second = ids["bulk1@example.com"], ids["bulk2@example.com"]
    assert len(first) == 2  # sent twice, as the same email
    assert first[0] == first[1]
    assert len(second) == 1  # never sent while its outcome could not be recorded
    assert first[0] != second[0]
