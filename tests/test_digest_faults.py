"""Digest runs against a real SMTP server on loopback (aiosmtpd): one connection for a run's emails, opened again
when the server limits emails per connection; an account deleted after its digest was leased; two senders at once
sharing the work and never sending one digest twice."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.notifications.digest import deliver, lease, send_digests
from app.notifications.mailer import Mailer
from app.services import Services
from app.settings import Settings
from tests.alerts import add_digest_entries, add_readers, count
from tests.mailboxes import Mailbox, mail_settings, smtp_server


async def _readers(services: Services, n: int, entries: int = 2) -> list[int]:
    """`n` readers with a due hourly digest of `entries` stories each; bulk<k>@example.com, k from 1."""
    await add_readers(services, n, digest="hourly")
    async with services.engine.connect() as connection:
        ids = list(await connection.scalars(text("SELECT id FROM users ORDER BY id")))
    await add_digest_entries(services, ids, entries)
    return ids


def _addresses(n: int) -> list[str]:
    return sorted(f"bulk{k}@example.com" for k in range(1, n + 1))


async def test_a_runs_digests_go_over_one_connection(services: Services, settings: Settings) -> None:
    await _readers(services, 45)
    mailbox = Mailbox()
    with smtp_server(mailbox) as port:
        assert await send_digests(services.engine, mail_settings(settings, port)) == 45
    assert mailbox.recipients() == _addresses(45)
    assert mailbox.connections == 1
    assert await count(services, "SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 90


async def test_a_server_that_limits_emails_per_connection_gets_them_over_new_ones(
    services: Services, settings: Settings
) -> None:
    await _readers(services, 30)
    limited = Mailbox(per_connection=7)  # the eighth MAIL FROM of a connection is answered 421
    with smtp_server(limited) as port:
        assert await send_digests(services.engine, mail_settings(settings, port)) == 30
    assert limited.recipients() == _addresses(30)  # each once, none lost
    assert limited.connections == 5  # 7 + 7 + 7 + 7 + 2
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE deliveries SET status = 'pending', next_attempt_at = now()"))
    capped = Mailbox()
    with smtp_server(capped) as port:  # and our own cap, where the server says nothing
        assert await send_digests(services.engine, mail_settings(settings, port, smtp_messages_per_connection=10)) == 30
    assert capped.connections == 3


async def test_an_account_deleted_after_its_digest_was_leased_gets_none_and_the_others_go_out(
    services: Services, settings: Settings
) -> None:
    gone, stays = await _readers(services, 2, entries=3)
    mailbox = Mailbox()
    with smtp_server(mailbox) as port:
        mail = mail_settings(settings, port)
        leased = await lease(services.engine, mail)
        assert sorted(leased.readers) == [gone, stays]
        async with services.engine.begin() as connection:  # the reader deletes their account meanwhile
            await connection.execute(text("DELETE FROM users WHERE id = :id"), {"id": gone})
        mailer = Mailer(mail)
        try:
            assert await deliver(services.engine, mail, mailer, leased) == 1
        finally:
            await mailer.close()
    assert mailbox.recipients() == ["bulk2@example.com"]
    assert await count(services, "SELECT count(*) FROM deliveries WHERE user_id = :u", u=gone) == 0
    assert await count(services, "SELECT count(*) FROM deliveries WHERE user_id = :u AND status = 'delivered'",
                       u=stays) == 3  # fmt: skip


class TwoSenderGate(Mailbox):
    """Holds each email until emails have come over two connections (two senders), at most `wait` seconds: one sender
    cannot finish alone while the other is still claiming."""

    def __init__(self, wait: float) -> None:
        super().__init__()
        self.wait, self.senders, self.both = wait, set[Any](), asyncio.Event()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.senders.add(session.peer)
        if len(self.senders) >= 2:
            self.both.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.both.wait(), self.wait)
        return await super().handle_DATA(server, session, envelope)


def _first_claim(engine: AsyncEngine) -> asyncio.Event:
    """Set once a digest claim on `engine` came back."""
    claimed = asyncio.Event()

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "pg_try_advisory_xact_lock" in statement:
            claimed.set()  # on the event loop's thread (SQLAlchemy's async adapter runs it there)

    event.listen(engine.sync_engine, "after_cursor_execute", seen)
    return claimed


async def test_two_senders_started_together_share_the_digests_and_send_each_once(
    services: Services, settings: Settings
) -> None:
    """Two senders (each its own engine, as two workers have) start while every reader is being claimed by a third
    transaction (as a sender mid-claim holds them): their first claims come back empty. They go on claiming while
    digests are due, and share 200 readers' digests, 3 entries each; the server holds each email until both senders
    have sent one, so neither can finish alone."""
    readers = 200
    await _readers(services, readers, entries=3)
    mailbox = TwoSenderGate(wait=10)
    engines = [create_async_engine(settings.database_url or "") for _ in range(2)]
    claimed = [_first_claim(engine) for engine in engines]
    try:
        with smtp_server(mailbox) as port:
            mail = mail_settings(settings, port)
            async with services.engine.connect() as claiming:
                held = await claiming.begin()
                await claiming.execute(text("SELECT pg_advisory_xact_lock(hashtextextended('digest:' || id, 0)) "
                                            "FROM users"))  # fmt: skip
                senders = [asyncio.create_task(send_digests(engine, mail)) for engine in engines]
                async with asyncio.timeout(30):  # until each sender's first claim came back (empty)
                    await asyncio.gather(*(first.wait() for first in claimed))
                await held.rollback()
            sent = await asyncio.gather(*senders)
    finally:
        for engine in engines:
            await engine.dispose()
    print(f"\ntwo senders, {readers} digests: {sent[0]} + {sent[1]} emails")
    assert min(sent) > 0, sent  # both sent
    assert sum(sent) == readers, sent  # and together, each digest once
    assert mailbox.recipients() == _addresses(readers)
    assert await count(services, "SELECT count(*) FROM deliveries WHERE status = 'delivered'") == readers * 3
    assert await count(services, "SELECT count(DISTINCT attempts) FROM deliveries") == 1  # each leased once


async def test_a_server_that_drips_its_replies_is_cut_off_at_the_emails_budget(services: Services,
                                                                               settings: Settings) -> None:  # fmt: skip
    """Each byte comes within the SMTP timeout (0.2 s), so no socket operation times out; the email's budget (three
    timeouts) cuts it off, and the digest waits for a retry."""
    await _readers(services, 1)

    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for byte in b"220 drip.example ESMTP " + b"." * 200 + b"\r\n":
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.close()

    server = await asyncio.start_server(drip, "127.0.0.1", 0)
    try:
        mail = mail_settings(settings, server.sockets[0].getsockname()[1], smtp_timeout_seconds=0.2)
        assert await send_digests(services.engine, mail) == 0
    finally:
        server.close()
    async with services.engine.connect() as connection:
        rows = (await connection.execute(text("SELECT status, last_error FROM deliveries"))).all()
    assert [row.status for row in rows] == ["failed", "failed"]
    assert rows[0].last_error == "TimeoutError: not sent within 0.6 s"
