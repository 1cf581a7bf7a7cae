"""A raw asyncio HTTP server on loopback whose paths misbehave as webhook receivers do in the wild: answering,
stalling, dripping headers or body, flooding, redirecting. It logs each request's `Newsagg-Delivery` key and counts
the requests in flight at once (a stalled one until the client hangs up)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

Behaviour = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
DRIP_SECONDS = 0.05


@dataclass
class HostileReceiver:
    url: str = ""
    received: list[tuple[str, str]] = field(default_factory=list)  # (path, delivery key) of every request read
    sent: dict[str, int] = field(default_factory=dict)  # body bytes written, by path
    in_flight: int = 0
    most_in_flight: int = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            path = head[0].split(" ")[1]
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
            await reader.readexactly(int(headers.get("content-length", "0")))
            self.received.append((path, headers.get("newsagg-delivery", "")))
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                await getattr(self, path.strip("/").split("/")[0])(path, reader, writer)
            finally:
                self.in_flight -= 1
        writer.transport.abort()

    async def ok(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()

    async def stall(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # answers nothing until the client hangs up

    async def drip_headers(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        while True:
            writer.write(b"a")
            await writer.drain()
            await asyncio.sleep(DRIP_SECONDS)

    async def drip_body(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
        while True:
            await self._body(path, writer, b".")
            await asyncio.sleep(DRIP_SECONDS)

    async def flood(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n")
        chunk = b"x" * 65536
        while self.sent.get(path, 0) < 100_000_000:
            await self._body(path, writer, chunk)

    async def redirect(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(f"HTTP/1.1 302 Found\r\nLocation: {self.url}/internal/admin\r\nContent-Length: 0\r\n\r\n".encode())
        await writer.drain()

    async def internal(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self.ok(path, reader, writer)

    async def _body(self, path: str, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        await writer.drain()
        self.sent[path] = self.sent.get(path, 0) + len(data)

    def keys(self, prefix: str) -> list[str]:
        return [key for path, key in self.received if path.startswith(prefix)]


@contextlib.asynccontextmanager
async def hostile_receiver(receiver: HostileReceiver | None = None) -> AsyncIterator[HostileReceiver]:
    receiver = receiver or HostileReceiver()
    tasks: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await receiver.serve(reader, writer)
        finally:
            tasks.discard(task)

    server = await asyncio.start_server(serve, "127.0.0.1", 0, limit=1 << 20)
    receiver.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield receiver
    finally:
        server.close()
        for task in list(tasks):  # the drips never end by themselves
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
