"""A real SMTP server on loopback (aiosmtpd) that keeps what it receives and counts the connections it was sent over;
it can refuse more than a few emails per connection (421, as providers do) and be slow to accept each one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from email import message_from_bytes
from typing import Any

from aiosmtpd.controller import Controller

from app.runtime.processes import free_port
from app.settings import Settings


class Mailbox:
    def __init__(self, per_connection: int | None = None, delay: float = 0.0,
                 on_data: Callable[[], Awaitable[None]] | None = None) -> None:  # fmt: skip
        self.messages: list[tuple[list[str], Any, int]] = []  # recipients, the email, its size in bytes
        self.peers: set[Any] = set()
        self.per_connection, self.delay, self.on_data = per_connection, delay, on_data

    @property
    def connections(self) -> int:
        return len(self.peers)

    def recipients(self) -> list[str]:
        return sorted(to for tos, _, _ in self.messages for to in tos)

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str, options: list[str]) -> str:
        self.peers.add(session.peer)
        if self.per_connection is not None and getattr(session, "accepted", 0) >= self.per_connection:
            return "421 4.7.0 Too many messages on this connection, reconnect"
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        session.accepted = getattr(session, "accepted", 0) + 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.on_data is not None:
            await self.on_data()
        self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content), len(envelope.content)))
        return "250 OK"


@contextmanager
def smtp_server(mailbox: Mailbox) -> Iterator[int]:
    """The server's port, while it runs."""
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()


def mail_settings(settings: Settings, port: int, **more: Any) -> Settings:
    return settings.model_copy(update={"smtp_host": "127.0.0.1", "smtp_port": port, "smtp_tls": "none", **more})


def parts(message: Any) -> tuple[str, str]:
    """A digest's plain-text and HTML bodies, decoded (it must be multipart/alternative with exactly those)."""
    assert message.get_content_type() == "multipart/alternative"
    plain, rich = message.get_payload()
    assert (plain.get_content_type(), rich.get_content_type()) == ("text/plain", "text/html")
    return plain.get_payload(decode=True).decode(), rich.get_payload(decode=True).decode()
