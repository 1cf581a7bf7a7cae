"""Digest runs are bounded (app/notifications/digest_runs.py): one per worker at a time, at most
NEWSAGG_DIGEST_CONCURRENT_RUNS across workers, a run past either ending at once (counted); a lease whose worker died
frees its place when it expires, one that cannot be returned is left to expire (counted), and without Redis runs go
ahead. The SMTP server (aiosmtpd on loopback) holds the first emails until the test lets them go, so a run is still
going, deterministically, when the next one starts."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from typing import Any

from prometheus_client import REGISTRY
from redis.asyncio import Redis
from sqlalchemy import text

from app.notifications.digest import run_seconds
from app.notifications.digest_runs import KEY, DigestRuns
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from jobs.notifications import send_digests_job
from tests.alerts import add_digest_entries, add_readers
from tests.mailboxes import Mailbox, mail_settings, smtp_server
from tests.test_ingest_outages import CutProxy


class Gate:
    """Holds the first `held` emails at DATA (in the SMTP server's loop) until `open` is set; the others pass."""

    def __init__(self, held: int) -> None:
        self.held, self.arrived = held, 0
        self.waiting = threading.Semaphore(0)  # one release per email held
        self.open = threading.Event()

    async def on_data(self) -> None:
        self.arrived += 1
        if self.arrived <= self.held:
            self.waiting.release()
            await asyncio.to_thread(self.open.wait, 60)

    async def until_held(self) -> None:
        for _ in range(self.held):
            assert await asyncio.to_thread(self.waiting.acquire, True, 30), "an email never reached the server"


async def _readers(services: Services, n: int) -> None:
    """`n` readers (bulk<k>@example.com) with a due hourly digest of two stories each."""
    await add_readers(services, n, digest="hourly")
    async with services.engine.connect() as connection:
        ids = list(await connection.scalars(text("SELECT id FROM users ORDER BY id")))
    await add_digest_entries(services, ids, 2)


def _worker(services: Services, mail: Settings) -> dict[str, Any]:
    """A worker process's job context (each worker has its own)."""
    return {"services": dataclasses.replace(services, settings=mail)}


def _skipped(reason: str) -> float:
    return REGISTRY.get_sample_value("newsagg_alert_digest_runs_skipped_total", {"reason": reason}) or 0.0


async def test_a_worker_starts_no_digest_run_while_its_previous_one_is_still_sending(
    services: Services, settings: Settings
) -> None:
    await _readers(services, 30)
    gate = Gate(held=1)
    mailbox = Mailbox(on_data=gate.on_data)
    with smtp_server(mailbox) as port:
        worker = _worker(services, mail_settings(settings, port))
        first = asyncio.create_task(send_digests_job(worker))
        try:
            await gate.until_held()  # given the run's first email is at a slow server
            skipped = _skipped("worker_busy")
            # when the cron starts the next run on the same worker, then it ends at once, counted
            assert await send_digests_job(worker) == 0
            assert _skipped("worker_busy") - skipped == 1
            assert len(mailbox.messages) == 0
        finally:
            gate.open.set()
        assert await first == 30  # and the first run sends them all
    assert await send_digests_job(worker) == 0  # the worker runs again once it is done (nothing due)
    assert _skipped("worker_busy") - skipped == 1


async def test_at_most_the_clusters_cap_of_digest_runs_go_at_once(services: Services, settings: Settings) -> None:
    await _readers(services, 45)  # 20 readers a claim: the first two runs take 40, leaving some for a third
    gate = Gate(held=2)
    mailbox = Mailbox(on_data=gate.on_data)
    with smtp_server(mailbox) as port:
        mail = mail_settings(settings, port, digest_concurrent_runs=2)
        workers = [_worker(services, mail) for _ in range(3)]
        going = [asyncio.create_task(send_digests_job(worker)) for worker in workers[:2]]
        try:
            await gate.until_held()  # given two workers' runs, each with an email at a slow server
            now = await _redis_now(services.redis)
            leases = await services.redis.zrange(KEY, 0, -1, withscores=True)
            assert len(leases) == 2
            assert all(expires - now >= run_seconds(mail) for _, expires in leases)  # outlive the runs' budget
            skipped = _skipped("cluster_cap")
            # when a third worker's run starts, then it ends at once, counted
            assert await send_digests_job(workers[2]) == 0
            assert _skipped("cluster_cap") - skipped == 1
        finally:
            gate.open.set()
        sent = await asyncio.gather(*going)
    assert sum(sent) == 45
    assert mailbox.recipients() == sorted(f"bulk{k}@example.com" for k in range(1, 46))
    assert await services.redis.zcard(KEY) == 0  # the leases returned when the runs ended


async def test_a_lease_whose_worker_died_frees_its_place_when_it_expires(services: Services,
                                                                         settings: Settings) -> None:  # fmt: skip
    await _readers(services, 3)
    mailbox = Mailbox()
    with smtp_server(mailbox) as port:
        mail = mail_settings(settings, port, digest_concurrent_runs=2)
        async with contextlib.AsyncExitStack() as dead:
            for _ in range(2):  # given two workers that took a lease each and died (never returned them)
                assert await dead.enter_async_context(DigestRuns(services.redis, mail).turn())
            assert await send_digests_job(_worker(services, mail)) == 0  # their leases still count
            # when their leases' time has passed
            now = await _redis_now(services.redis)
            for member in await services.redis.zrange(KEY, 0, -1):
                await services.redis.zadd(KEY, {member: now - 1}, xx=True)
            # then a run goes
            assert await send_digests_job(_worker(services, mail)) == 3
    assert mailbox.recipients() == ["bulk1@example.com", "bulk2@example.com", "bulk3@example.com"]


async def test_without_redis_a_digest_run_goes_ahead(services: Services, settings: Settings) -> None:
    await _readers(services, 3)
    degraded = REGISTRY.get_sample_value("newsagg_redis_degraded_total", {"part": "digest_runs"}) or 0.0
    away = Redis.from_url(f"redis://127.0.0.1:{free_port()}/5")
    mailbox = Mailbox()
    try:
        with smtp_server(mailbox) as port:
            mail = mail_settings(settings, port)
            worker = _worker(services, mail) | {"digest_runs": DigestRuns(away, mail)}
            assert await send_digests_job(worker) == 3  # the claims in PostgreSQL keep each digest to one email
            assert await send_digests_job(worker) == 0
    finally:
        await away.aclose()
    assert len(mailbox.messages) == 3
    assert (REGISTRY.get_sample_value("newsagg_redis_degraded_total", {"part": "digest_runs"}) or 0.0) - degraded == 2


async def test_a_lease_that_cannot_be_returned_is_left_to_expire_and_counted(services: Services,
                                                                             settings: Settings) -> None:  # fmt: skip
    server = services.redis.connection_pool.connection_kwargs
    proxy = CutProxy(server["port"])
    await proxy.start()
    through = Redis(host="127.0.0.1", port=proxy.port, db=server.get("db", 0))
    degraded = REGISTRY.get_sample_value("newsagg_redis_degraded_total", {"part": "digest_runs"}) or 0.0
    try:
        async with DigestRuns(through, settings).turn() as going:  # given a run that took its lease
            assert going
            await proxy.cut()  # when Redis vanishes before the run ends
    finally:
        await through.aclose()
    # then the lease is left to expire, and that is counted
    assert await services.redis.zcard(KEY) == 1
    assert (REGISTRY.get_sample_value("newsagg_redis_degraded_total", {"part": "digest_runs"}) or 0.0) - degraded == 1


async def _redis_now(redis: Redis) -> float:
    seconds, micros = await redis.time()
    return float(seconds) + micros / 1_000_000
