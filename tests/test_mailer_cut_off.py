"""An email cut off at its budget is never sent afterwards: a raw SMTP server on loopback that stalls the QUIT of a
rotated connection (its reply dripped, so no socket operation times out) until the email waiting behind it was
counted failed."""

from __future__ import annotations

import asyncio
from email.message import EmailMessage

from app.notifications.mailer import Mailer
from app.settings import Settings
from tests.mailboxes import mail_settings


class StallingServer:
    """Speaks just enough SMTP; the first connection's QUIT is answered one byte at a time until `released`."""

    def __init__(self) -> None:
        self.recipients: list[str] = []
        self.released = asyncio.Event()
        self.connections = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        first = self.connections == 1
        writer.write(b"220 stall.example ESMTP\r\n")
        while line := await reader.readline():
            verb = line[:4].upper()
            if verb == b"QUIT":
                await self._quit(writer, stall=first)
                return
            if verb == b"RCPT":
                self.recipients.append(line.decode().split(":", 1)[1].strip(" <>\r\n"))
            if verb == b"DATA":
                writer.write(b"354 go on\r\n")
                while await reader.readline() != b".\r\n":
                    pass
            writer.write(b"250 OK\r\n")
        writer.close()

    async def _quit(self, writer: asyncio.StreamWriter, stall: bool) -> None:
        writer.write(b"221 ")
        while stall and not self.released.is_set():
            writer.write(b".")  # each byte well within the SMTP timeout
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(b"\r\n")
        await writer.drain()
        writer.close()


def _email(to: str) -> EmailMessage:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "digest@newsagg.example", to, "Your digest"
    message.set_content("Three stories.")
    return message


async def test_an_email_cut_off_while_its_connection_quits_is_never_sent_afterwards(settings: Settings) -> None:
    stalling = StallingServer()
    server = await asyncio.start_server(stalling.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    mail = mail_settings(settings, port, smtp_timeout_seconds=0.2, smtp_messages_per_connection=1)
    mailer = Mailer(mail)
    try:
        assert await mailer.send(_email("first@example.com")) is None
        # the second rotates the connection: its QUIT stalls past the email's budget (0.6 s)
        assert await mailer.send(_email("cut@example.com")) == "TimeoutError: not sent within 0.6 s"
        stalling.released.set()  # the QUIT ends: the second email's thread goes on
        assert await mailer.send(_email("third@example.com")) is None  # after that thread left the connection
    finally:
        await mailer.close()
        server.close()
    assert stalling.recipients == ["first@example.com", "third@example.com"]
