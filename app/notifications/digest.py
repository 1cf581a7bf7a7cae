"""Email digests: a reader's due digest entries (hourly or daily, app/notifications/fanout_sql.py) sent as one
plain-text email over SMTP (smtplib in a thread), STARTTLS or implicit TLS as configured. Each entry is a delivery:
claimed with a lease, marked delivered with the email, retried with back-off and dead after N attempts if the
server keeps refusing."""

from __future__ import annotations

import asyncio
import smtplib
import ssl
import time
from collections import defaultdict
from email.message import EmailMessage
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from app.notifications import delivery_repository as deliveries
from app.observability.alerts import count_deliveries, count_digest_emails
from app.settings import Settings

CLAIM = 2000  # digest entries one run claims


def compose(settings: Settings, to: str, entries: list[dict[str, Any]]) -> EmailMessage:
    message = EmailMessage()
    message["From"], message["To"] = settings.smtp_from, to
    message["Subject"] = f"newsagg: {len(entries)} {'story' if len(entries) == 1 else 'stories'} for you"
    lines = [f"- {e.get('title', '')} ({e.get('source_count') or '?'} outlets, {e.get('at', '')[:16]})"
             for e in entries]  # fmt: skip
    message.set_content("Your newsagg digest:\n\n" + "\n".join(lines) + "\n")
    return message


def _send(settings: Settings, message: EmailMessage) -> None:
    """Blocking: run in a thread."""
    assert settings.smtp_host
    timeout = settings.webhook_timeout_seconds * 2
    if settings.smtp_tls == "tls":
        smtp: smtplib.SMTP = smtplib.SMTP_SSL(settings.smtp_host, settings.smtp_port, timeout=timeout,
                                              context=ssl.create_default_context())  # fmt: skip
    else:
        smtp = smtplib.SMTP(settings.smtp_host, settings.smtp_port, timeout=timeout)
    with smtp:
        if settings.smtp_tls == "starttls":
            smtp.starttls(context=ssl.create_default_context())
        if settings.smtp_username:
            smtp.login(settings.smtp_username, settings.smtp_password or "")
        smtp.send_message(message)


async def send_digests(engine: AsyncEngine, settings: Settings) -> int:
    """Sends every due digest; returns how many emails went out. Without `smtp_host`, entries wait."""
    if not settings.smtp_host:
        return 0
    async with engine.begin() as connection:
        claimed = await deliveries.claim(connection, "email", limit=CLAIM, lease_seconds=300)
        emails = await deliveries.emails(connection, list({r.user_id for r in claimed}))
    by_reader: dict[int, list[Any]] = defaultdict(list)
    for row in claimed:
        by_reader[row.user_id].append(row)
    recorded: list[tuple[int, str, float, str | None, int | None, float | None]] = []
    sent = 0
    for user_id, rows in by_reader.items():
        started = time.perf_counter()
        message = compose(settings, emails[user_id], [r.payload for r in sorted(rows, key=lambda r: r.event_id)])
        try:
            await asyncio.to_thread(_send, settings, message)
            error = None
            sent += 1
        except (smtplib.SMTPException, OSError) as failure:
            error = f"{type(failure).__name__}: {failure}"[:500]
        duration = (time.perf_counter() - started) * 1000
        for row in rows:
            status, wait = settings.notify_retries.settle(row.attempts, error is not None)
            recorded.append((row.id, status, wait, error, None, duration))
    async with engine.begin() as connection:
        await deliveries.record(connection, recorded)
    count_deliveries("email", (status for _, status, *_ in recorded))
    count_digest_emails(sent)
    return sent
