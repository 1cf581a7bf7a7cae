"""Email digests: each reader's due digest entries (hourly or daily, app/notifications/fanout_sql.py) sent as one
email of bounded size, plain text and HTML (app/notifications/digest_email.py), a run's emails over one SMTP connection
(app/notifications/mailer.py). Each entry is a delivery: leased with its reader's other entries, marked delivered
(listed) or covered (counted in the "and N more" line) with the email, retried with back-off and dead after N
attempts if the server keeps refusing.

Lease: a claim takes at most CLAIM_READERS readers, whose emails go one after another, each cut off at its budget
(`mailer.budget`, three SMTP timeouts); so a claim's emails are done within CLAIM_READERS budgets, and its lease is
that plus RECORD_MARGIN_S to record them. A sender also checks its own clock (started before the claim: it errs
early) before each email, and releases the readers whose email might not be sent and recorded inside the lease (no
attempt charged, claimed again at once): no email is sent once its entries may have been leased to another sender.
Each reader's outcome is recorded as soon as their email is sent, so a run cut off records what it sent.

A run claims until nothing is due (or RUN_SECONDS): a claim that comes back empty while entries are still due (the
readers at the front were being claimed by another sender at that moment) is tried again shortly, so two senders
started together share the work rather than the second ending at once. A reader in their quiet hours (their time
zone) is not claimed: their entries wait for the end of the quiet hours, as their webhooks do.

At least once: an email sent whose sending could not be recorded (the database went away) is sent again when its
lease ends, with the same Message-ID (a digest of its entries) when no entry joined in between."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.notifications import delivery_repository as deliveries
from app.notifications import digest_repository as digests
from app.notifications.digest_email import Digest, compose
from app.notifications.mailer import Mailer, budget
from app.observability.alerts import count_deliveries, count_digest_emails
from app.settings import Settings

log = logging.getLogger(__name__)
CLAIM_READERS = 20  # readers one claim leases (all their due entries)
RECORD_MARGIN_S = 60.0  # of a lease, kept for recording its emails' outcomes
RUN_SECONDS = 50.0  # a run claims no more after this (the cron starts one a minute; the next goes on)
CLAIM_AGAIN_S = 0.2  # after a claim that came back empty while entries were due (another sender was claiming them)
Outcome = tuple[int, str, float, str | None, int | None, float | None]


@dataclass(frozen=True)
class Leased:
    readers: dict[int, list[Any]]  # each reader's entries, best first
    send_before: float  # time.monotonic() after which no email of the claim may start


def lease_seconds(settings: Settings) -> float:
    return CLAIM_READERS * budget(settings) + RECORD_MARGIN_S


def run_seconds(settings: Settings) -> float:
    """The longest a run takes: it claims for RUN_SECONDS, and its last claim's emails are sent and recorded within
    their lease (the job's timeout: a run cut off earlier would leave emails it sent to be sent again)."""
    return RUN_SECONDS + lease_seconds(settings)


async def send_digests(engine: AsyncEngine, settings: Settings) -> int:
    """Sends every due digest; returns how many emails went out. Without `smtp_host`, entries wait."""
    if not settings.smtp_host:
        return 0
    sent, stop, mailer = 0, time.monotonic() + RUN_SECONDS, Mailer(settings)
    try:
        while time.monotonic() < stop:
            if (leased := await lease(engine, settings)).readers:
                sent += await deliver(engine, settings, mailer, leased)
            elif await _still_due(engine):
                await asyncio.sleep(CLAIM_AGAIN_S)
            else:
                break
    finally:
        await mailer.close()
    return sent


async def _still_due(engine: AsyncEngine) -> bool:
    async with engine.connect() as connection:
        return await digests.any_due(connection)


async def lease(engine: AsyncEngine, settings: Settings) -> Leased:
    """The due entries of the next few readers, leased to this sender (those in their quiet hours deferred)."""
    started, lease_for = time.monotonic(), lease_seconds(settings)
    async with engine.begin() as connection:
        if deferred := await digests.defer_quiet(connection):
            log.debug("notifications: %d reader(s) in their quiet hours get their digest when they end", deferred)
        rows = await digests.claim(connection, readers=CLAIM_READERS, top=settings.digest_max_stories,
                                   lease_seconds=lease_for)  # fmt: skip
    readers: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        readers[row.user_id].append(row)
    return Leased(dict(readers), started + lease_for - RECORD_MARGIN_S)


async def deliver(engine: AsyncEngine, settings: Settings, mailer: Mailer, leased: Leased) -> int:
    """Sends the leased digests, each reader's outcome recorded right after its email; how many emails the server
    accepted. Readers not tried (the lease running out, or the run cut off) are released, no attempt charged."""
    async with engine.connect() as connection:
        emails = await deliveries.emails(connection, list(leased.readers))
        links = await _story_links(connection, settings, leased)
    sent, waiting = 0, list(leased.readers)
    try:
        while waiting and time.monotonic() + budget(settings) <= leased.send_before:
            user_id = waiting.pop(0)
            if user_id in emails:
                digest = compose(settings, emails[user_id], user_id, leased.readers[user_id], links)
                sent += await _send(engine, settings, mailer, digest, leased.readers[user_id])
            else:  # the account was deleted since the claim: its entries went with it (cascade)
                log.info("notifications: no digest for reader %d, whose account is gone", user_id)
    finally:  # an email that might outlast the lease is not started: its reader is claimed again at once
        async with engine.begin() as connection:
            await digests.release(connection, [row for user_id in waiting for row in leased.readers[user_id]])
    return sent


async def _story_links(connection: AsyncConnection, settings: Settings, leased: Leased) -> dict[int, str]:
    """Where each story the claim's emails may list leads: `share_story_url` when set, else its lead article."""
    ids = sorted({int(row.payload["story_id"]) for rows in leased.readers.values() for row in rows
                  if row.payload is not None and row.payload.get("story_id") is not None})  # fmt: skip
    if settings.share_story_url:
        return {story: settings.share_story_url.replace("{story_id}", str(story)) for story in ids}
    return await digests.story_links(connection, ids)


async def _send(engine: AsyncEngine, settings: Settings, mailer: Mailer, digest: Digest, rows: list[Any]) -> bool:
    """One reader's digest sent and its entries' outcomes recorded; whether the server accepted it."""
    started = time.perf_counter()
    error = await mailer.send(digest.message)
    duration = (time.perf_counter() - started) * 1000
    recorded: list[Outcome] = []
    for row in rows:
        settled, wait = settings.notify_retries.settle(row.attempts, error is not None)
        status = "covered" if settled == "delivered" and row.id not in digest.listed else settled
        recorded.append((row.id, status, wait, error, None, duration))
    async with engine.begin() as connection:
        await deliveries.record(connection, recorded)
    count_deliveries("email", (status for _, status, *_ in recorded))
    count_digest_emails(error is None)
    return error is None
