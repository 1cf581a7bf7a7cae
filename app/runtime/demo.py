"""Demo/replay mode: serve a folder of saved feed snapshots from a loopback HTTP server, one feed per folder.

A folder holding snapshot files (named so that they sort in time order) is one feed: each fetch serves the next
snapshot until the last, so the crawler sees the feed move as it did when the snapshots were taken. A feed file
lying alone is served as it is. ETag and If-None-Match work, so conditional GET is exercised too.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

log = logging.getLogger(__name__)
FEED_SUFFIXES = frozenset({".xml", ".rss", ".atom", ".rdf", ".json"})


@dataclass
class ReplayFeed:
    path: str  # URL path, e.g. /rss/bbc
    snapshots: list[Path]
    served: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_snapshot(self) -> Path:
        with self.lock:
            snapshot = self.snapshots[min(self.served, len(self.snapshots) - 1)]
            self.served += 1
        return snapshot


def discover_feeds(root: Path) -> list[ReplayFeed]:
    """Every folder with feed files is one feed; feed files directly in `root` are one feed each."""
    root = root.resolve()
    feeds: list[ReplayFeed] = []
    for folder in sorted({p.parent for p in root.rglob("*") if p.suffix.lower() in FEED_SUFFIXES}):
        files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in FEED_SUFFIXES)
        if folder == root:
            feeds.extend(ReplayFeed("/" + f.name, [f]) for f in files)
        else:
            feeds.append(ReplayFeed("/" + folder.relative_to(root).as_posix(), files))
    return feeds


def _content_type(path: Path) -> str:
    return "application/feed+json" if path.suffix.lower() == ".json" else "application/xml; charset=utf-8"


class DemoFeedServer:
    """ThreadingHTTPServer on 127.0.0.1 in a daemon thread; `stop()` shuts it down."""

    def __init__(self, root: Path, port: int = 0) -> None:
        self.feeds = {feed.path: feed for feed in discover_feeds(root)}
        if not self.feeds:
            raise ValueError(f"no feed files ({', '.join(sorted(FEED_SUFFIXES))}) under {root}")
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="demo-feeds", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, feed: ReplayFeed) -> str:
        return f"http://127.0.0.1:{self.port}{feed.path}"

    def start(self) -> DemoFeedServer:
        self._thread.start()
        log.info("demo feeds: %d feeds on http://127.0.0.1:%d", len(self.feeds), self.port)
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        feeds = self.feeds

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                feed = feeds.get(unquote(urlsplit(self.path).path).rstrip("/"))
                if feed is None:
                    self.send_error(404, "no such feed")
                    return
                snapshot = feed.next_snapshot()
                body = snapshot.read_bytes()
                etag = '"' + hashlib.sha1(body).hexdigest() + '"'
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", _content_type(snapshot))
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("demo feeds: " + format, *args)

        return Handler
