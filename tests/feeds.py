"""Small feeds made by code, and a real HTTP server on 127.0.0.1 that serves whatever a test puts on it."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape


@dataclass
class Item:
    title: str
    link: str
    guid: str | None = None
    summary: str = ""
    published: datetime | None = None
    author: str | None = None


def rss(items: list[Item], *, title: str = "Test Wire", link: str = "https://example.org/") -> bytes:
    parts = [f"<item><title>{escape(i.title)}</title><link>{escape(i.link)}</link>"
             + (f"<guid>{escape(i.guid)}</guid>" if i.guid else "")
             + (f"<description>{escape(i.summary)}</description>" if i.summary else "")
             + (f"<author>{escape(i.author)}</author>" if i.author else "")
             + (f"<pubDate>{format_datetime(i.published)}</pubDate>" if i.published else "")
             + "</item>" for i in items]  # fmt: skip
    return (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        f"<title>{escape(title)}</title><link>{escape(link)}</link><description>d</description>"
        + "".join(parts)
        + "</channel></rss>"
    ).encode()


def atom(items: list[Item], *, title: str = "Atom Desk") -> bytes:
    entries = [f"<entry><title>{escape(i.title)}</title>" + (f"<link href=\"{escape(i.link)}\"/>" if i.link else "") +
               f"<id>{escape(i.guid or i.link)}</id><summary type=\"html\">{escape(i.summary)}</summary>"
               f"<updated>{(i.published or datetime.now(UTC)).isoformat()}</updated></entry>"
               for i in items]  # fmt: skip
    return (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>{escape(title)}</title><id>urn:test</id><updated>{datetime.now(UTC).isoformat()}</updated>"
        + "".join(entries)
        + "</feed>"
    ).encode()


def answer(handler: BaseHTTPRequestHandler, body: bytes, content_type: str = "application/rss+xml") -> None:
    """A 200 with `body`, from a route that is a function; quiet when the client has gone (a killed worker's)."""
    with contextlib.suppress(OSError):
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


def items(n: int, *, prefix: str = "Story", site: str = "https://news.example.org", start: int = 0) -> list[Item]:
    base = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    return [
        Item(title=f"{prefix} {k}", link=f"{site}/{prefix.lower()}-{k}?utm_source=rss", guid=f"{prefix}-{k}",
             summary=f"<p>Summary of <b>{prefix} {k}</b></p><script>alert(1)</script>",
             published=base + timedelta(minutes=10 * k))
        for k in range(start, start + n)
    ]  # fmt: skip


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


# A route is a fixed reply, a function returning one, or a function that writes the response itself (None).
Route = Reply | Callable[[BaseHTTPRequestHandler], Reply | None]


class FeedServer:
    """`server.routes["/feed"] = Reply(...)`; `server.hits["/feed"]` counts requests; `server.requests` logs them."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: dict[str, int] = {}
        self.requests: list[dict[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                server.hits[path] = server.hits.get(path, 0) + 1
                server.requests.append({"path": path, **{k.lower(): v for k, v in self.headers.items()}})
                route = server.routes.get(path)
                reply = Reply(404, b"not found") if route is None else route(self) if callable(route) else route
                if reply is None:
                    return
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if "Content-Length" not in reply.headers:
                    self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                if reply.body:
                    self.wfile.write(reply.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> FeedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve() -> Iterator[FeedServer]:
    with FeedServer() as server:
        yield server
