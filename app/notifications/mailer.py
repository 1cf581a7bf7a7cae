"""The SMTP connection of one digest run (smtplib, in a thread): opened at the first email, STARTTLS or implicit TLS
as configured, reused for the next ones up to `smtp_messages_per_connection`, and opened again when the server
drops it (a 421 "too many messages" among others), the email it dropped sent again once. Each email has a hard
budget (`budget`): past it, the socket is shut and the email counts as failed, so a run's time is bounded by its
emails whatever a server does (a reply dripped one byte at a time included). The thread of an email cut off may go on
(in the QUIT of a connection it rotates, connecting, waiting for the connection): it sends nothing once its email was
given up, so an email counted failed is never sent after its lease may have passed to another sender."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import smtplib
import socket
import ssl
import threading
from collections.abc import Iterator
from email.message import EmailMessage

from app.settings import Settings

log = logging.getLogger(__name__)
OPERATIONS_PER_EMAIL = 3  # connect and greet, send, and a reconnection: the budget counts this many timeouts


def budget(settings: Settings) -> float:
    """Seconds one digest email may take at most (a reconnection included)."""
    return OPERATIONS_PER_EMAIL * settings.smtp_timeout_seconds


class Mailer:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._smtp: smtplib.SMTP | None = None
        self._sent = 0  # on the open connection
        self._lock = threading.Lock()  # one thread on the connection at a time (an email cut off may still hold it)
        self.connections = 0

    async def send(self, message: EmailMessage) -> str | None:
        """None when the server accepted `message`; else why it did not."""
        given_up = threading.Event()  # once set, a thread still working on `message` sends nothing more
        try:
            async with asyncio.timeout(budget(self._settings)):
                await self._send_or_resend(message, given_up)
        except TimeoutError:
            given_up.set()
            self._abort()
            return f"TimeoutError: not sent within {budget(self._settings):g} s"
        except (smtplib.SMTPException, OSError, GivenUp) as failure:
            return f"{type(failure).__name__}: {failure}"[:500]
        finally:
            given_up.set()  # the run itself cancelled included
        return None

    async def _send_or_resend(self, message: EmailMessage, given_up: threading.Event) -> None:
        reused = self._smtp is not None and self._sent < self._settings.smtp_messages_per_connection
        try:
            await asyncio.to_thread(self._send, message, given_up)
        except (smtplib.SMTPException, OSError) as failure:
            if not self._lost(failure):
                raise  # refused on a working connection (a bad address): that email's failure
            self._close()
            if not reused:
                raise  # a new connection failed: the server is down
            log.info("notifications: the SMTP server dropped the connection (%s); sending again on a new one", failure)
            await asyncio.to_thread(self._send, message, given_up)

    def _send(self, message: EmailMessage, given_up: threading.Event) -> None:
        """Blocking: run in a thread. Sends nothing once `given_up` is set (its email counted failed meanwhile)."""
        with self._locked():
            if self._smtp is None or self._sent >= self._settings.smtp_messages_per_connection:
                self._close(quit=True)  # may block on a server slow to answer QUIT
                _go_on_unless(given_up)
                self._smtp = smtp = unconnected(self._settings)  # held before connecting: _abort reaches it
                self._sent = 0
                self.connections += 1
                greet(smtp, self._settings)
            smtp = self._smtp
            _go_on_unless(given_up)
            assert smtp is not None
            smtp.send_message(message)
            self._sent += 1

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The connection to this thread alone; an email given up meanwhile (past its budget) gives up the wait."""
        if not self._lock.acquire(timeout=budget(self._settings)):
            raise GivenUp("the SMTP connection stayed busy with an earlier email")
        try:
            yield
        finally:
            self._lock.release()

    def _lost(self, failure: Exception) -> bool:
        smtp = self._smtp
        return isinstance(failure, (OSError, smtplib.SMTPServerDisconnected)) or smtp is None or smtp.sock is None

    def _abort(self) -> None:
        """From the event loop, while a thread may be blocked on the socket: shutting it down wakes that thread."""
        smtp, self._smtp = self._smtp, None
        if smtp is not None and smtp.sock is not None:
            with contextlib.suppress(OSError):
                smtp.sock.shutdown(socket.SHUT_RDWR)

    def _close(self, quit: bool = False) -> None:
        smtp, self._smtp = self._smtp, None
        if smtp is not None:
            with contextlib.suppress(smtplib.SMTPException, OSError):
                smtp.quit() if quit else smtp.close()

    async def close(self) -> None:
        await asyncio.to_thread(self._quit)

    def _quit(self) -> None:
        """Blocking: the connection closed once no email uses it."""
        try:
            with self._locked():
                self._close(quit=True)
        except GivenUp:
            self._abort()  # an email given up still holds it: shutting its socket wakes that thread


class GivenUp(Exception):
    """The email was given up (past its budget, or its run ended): its thread stops before sending it."""


def _go_on_unless(given_up: threading.Event) -> None:
    if given_up.is_set():
        raise GivenUp("given up before it was sent")


def unconnected(settings: Settings) -> smtplib.SMTP:
    timeout = settings.smtp_timeout_seconds
    if settings.smtp_tls == "tls":
        return smtplib.SMTP_SSL(timeout=timeout, context=ssl.create_default_context())
    return smtplib.SMTP(timeout=timeout)


def greet(smtp: smtplib.SMTP, settings: Settings) -> None:
    """Connects `smtp`, upgrades it to TLS and logs in, as configured. Blocking."""
    assert settings.smtp_host
    smtp.connect(settings.smtp_host, settings.smtp_port)
    if settings.smtp_tls == "starttls":
        smtp.starttls(context=ssl.create_default_context())
    if settings.smtp_username:
        smtp.login(settings.smtp_username, settings.smtp_password or "")
