"""PostgreSQL gone for ten seconds while webhooks are delivered: cut after the POSTs were made but before their
outcomes are written, and again before a run could lease anything. Each run fails cleanly (a log line, a count); no
delivery is marked delivered unsent; once the server is back and the leases have ended, every delivery is sent again
with the same `Newsagg-Delivery` key and recorded: the receiver may see a duplicate, never miss one.

PostgreSQL here is a server of the test's own behind a TCP proxy that can be cut, so stopping it touches nobody."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.notifications.delivery import lease_seconds
from app.notifications.fanout import fan_out
from app.notifications.webhooks import webhook_client
from app.services import Services
from app.settings import Settings
from jobs.notifications import deliver_webhooks_job
from tests.alerts import add_hooked_readers
from tests.hostile_receivers import HostileReceiver, hostile_receiver
from tests.newsroom import add_breaking_event
from tests.test_ingest_outages import OUTAGE_SECONDS, CutProxy, own_postgres

READERS = 40
UNREACHABLE = "newsagg_database_unreachable_job_retries_total"


class CuttingReceiver(HostileReceiver):
    """Answers 200 to every POST, but the first one it receives cuts PostgreSQL away first."""

    proxy: CutProxy
    cut_at = 0.0

    async def cut(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.cut_at:
            self.cut_at = time.monotonic()
            await self.proxy.cut()
        await self.ok(path, reader, writer)


async def _deliveries(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as connection:
        return list(await connection.execute(text("SELECT idempotency_key, status, attempts FROM deliveries")))


async def test_postgresql_away_mid_delivery_loses_nothing_and_resends_with_the_same_key(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    async with own_postgres() as pg, hostile_receiver(CuttingReceiver()) as hook:
        assert isinstance(hook, CuttingReceiver)
        hook.proxy = proxy = CutProxy(pg.port)
        await proxy.start()
        direct = create_async_engine(pg.url())
        own = settings.model_copy(update={"database_url": pg.url().replace(f":{pg.port}/", f":{proxy.port}/"),
                                          "webhooks_allow_loopback": True, "webhook_timeout_seconds": 1,
                                          "webhook_concurrency": 500})  # fmt: skip
        assert lease_seconds(own) < OUTAGE_SECONDS  # the leases end while the server is away
        worker = Services.open(own)
        try:
            # given a breaking story for readers with a webhook each
            await add_hooked_readers(worker, [f"{hook.url}/cut/{n}" for n in range(READERS)])
            await add_breaking_event(worker, 41)
            assert (await fan_out(direct, own)).webhooks == READERS
            failed_runs = REGISTRY.get_sample_value(UNREACHABLE) or 0
            async with webhook_client(own) as client:
                ctx = {"services": worker, "webhooks": client}
                with caplog.at_level(logging.WARNING, logger="jobs.notifications"):
                    # when PostgreSQL vanishes after the POSTs were made, before their outcomes are written
                    assert await deliver_webhooks_job(ctx) == 0
                    posted = Counter(key for _, key in hook.received)
                    assert len(posted) == READERS
                    # then nothing is marked delivered: every delivery is still leased, its attempt counted
                    assert {(d.status, d.attempts) for d in await _deliveries(direct)} == {("sending", 1)}
                    # and a run while it is away fails before leasing anything, and POSTs nothing
                    assert await deliver_webhooks_job(ctx) == 0
                    assert Counter(key for _, key in hook.received) == posted
                    assert {(d.status, d.attempts) for d in await _deliveries(direct)} == {("sending", 1)}
                assert (REGISTRY.get_sample_value(UNREACHABLE) or 0) - failed_runs == 2
                lost = [r.getMessage() for r in caplog.records if "PostgreSQL unreachable" in r.getMessage()]
                assert len(lost) == 2, lost

                # when the server is back after ten seconds, the runs go on until everything is delivered
                await asyncio.sleep(max(0.0, hook.cut_at + OUTAGE_SECONDS - time.monotonic()))
                await proxy.start()
                delivered = 0
                for _ in range(100):
                    delivered += await deliver_webhooks_job(ctx)
                    if delivered >= READERS:
                        break
                    await asyncio.sleep(0.2)
            rows = await _deliveries(direct)
            assert {(d.status, d.attempts) for d in rows} == {("delivered", 2)}
            # the receiver saw every delivery twice, with the same key each time, and nothing else
            assert Counter(key for _, key in hook.received) == {d.idempotency_key: 2 for d in rows}
        finally:
            await worker.close()
            await proxy.cut()
            await direct.dispose()
