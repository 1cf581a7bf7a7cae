"""How many digest runs go at once: one per worker process, and at most `digest_concurrent_runs` across the cluster
(leases in a Redis sorted set scored by their expiry, on Redis's own clock). The cron starts a run every minute and a
run may last its whole time budget under a slow SMTP server; without a bound a dozen would overlap, each holding a
worker slot and an SMTP connection for nothing (the claims already keep them from sending one digest twice).

A lease outlives the longest run (`run_seconds` and a margin), so a worker that dies holding one frees it then, and
is returned when the run ends (left to expire, counted in newsagg_redis_degraded_total, when Redis is away by then).
Without Redis a run goes ahead uncounted: the claims in PostgreSQL still keep every digest from being sent
twice, and digests waiting for Redis would help no one."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from redis.asyncio import Redis

from app.notifications.digest import run_seconds
from app.observability.alerts import count_digest_run_skipped
from app.resilience.leases import CountedLeases
from app.settings import Settings

log = logging.getLogger(__name__)
KEY = "newsagg:digest:runs"
LEASE_MARGIN_S = 60.0  # a lease outlives its run's budget by this much (the job's own end, its release)


def lease_seconds(settings: Settings) -> float:
    return run_seconds(settings) + LEASE_MARGIN_S


class DigestRuns:
    """The digest runs of one worker process."""

    def __init__(self, redis: Redis, settings: Settings) -> None:
        self._settings = settings
        self._leases = CountedLeases(redis, "digest_runs")
        self._running = False  # this process's run (one event loop: no lock needed around the flag)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[bool]:
        """Whether a run may go now, held for the block: False when this process already runs one, or the cluster
        runs `digest_concurrent_runs` (the caller ends at once; logged at debug and counted)."""
        if self._running:
            yield self._skipped("worker_busy", "this worker is still sending the previous run's digests")
            return
        self._running = True
        try:
            cap = self._settings.digest_concurrent_runs
            # fail open: PostgreSQL's claims still keep each digest from going twice
            async with self._leases.held(KEY, cap, lease_seconds(self._settings), fail_open=True) as taken:
                yield taken or self._skipped("cluster_cap", f"{cap} runs are going already")
        finally:
            self._running = False

    def _skipped(self, reason: str, why: str) -> bool:
        log.debug("send_digests: not run, %s", why)
        count_digest_run_skipped(reason)
        return False
