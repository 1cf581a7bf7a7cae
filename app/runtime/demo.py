"""Demo/replay mode: serve a folder of saved feed snapshots from a loopback HTTP server, one feed per folder.

A folder holding snapshot files is one feed: each fetch serves the snapshot the replay's compressed clock has
reached (app/runtime/replay.py), its dates shifted to the present, so the crawler sees the feed move as it did when
the snapshots were taken, only faster. The replay's clock starts at the first feed request, not when the server is
made: the seconds `newsagg up` spends starting its worker would otherwise replay hours of news nobody fetched. A
feed file lying alone is one snapshot; a tar archive of such folders is unpacked once into the home
(app/runtime/snapshot_archive.py). A feed with no snapshot yet at the replay's position answers 503 with Retry-After.
ETag and If-None-Match work, so conditional GET is exercised too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from app.runtime.replay import Replay, fetched_at
from app.runtime.snapshot_archive import FEED_SUFFIXES

log = logging.getLogger(__name__)


@dataclass
class ReplayFeed:
    path: str  # URL path, e.g. /rss/bbc
    snapshots: list[Path]
    times: list[datetime] = field(default_factory=list)  # when each snapshot was taken, in order

    def __post_init__(self) -> None:
        taken = sorted((fetched_at(s), s) for s in self.snapshots)
        self.snapshots, self.times = [s for _, s in taken], [t for t, _ in taken]

    def snapshot_at(self, position: datetime) -> Path | None:
        """The last snapshot taken at or before `position`."""
        due = [s for t, s in zip(self.times, self.snapshots, strict=True) if t <= position]
        return due[-1] if due else None


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


Clock = Callable[[], datetime]


def _wall_clock() -> datetime:
    return datetime.now(UTC)


class DemoFeedServer:
    """ThreadingHTTPServer on 127.0.0.1 in a daemon thread; `stop()` shuts it down. The replay (the busiest `hours`
    of the snapshots, `speed` times faster than they happened) begins at the first request for a feed."""

    def __init__(self, root: Path, port: int = 0, *, speed: float = 1.0, hours: float = 24.0,
                 clock: Clock = _wall_clock) -> None:  # fmt: skip
        self.feeds = {feed.path: feed for feed in discover_feeds(root)}
        if not self.feeds:
            raise ValueError(f"no feed files ({', '.join(sorted(FEED_SUFFIXES))}) under {root}")
        times = [t for feed in self.feeds.values() for t in feed.times]
        self.replay = Replay.busiest(times, hours, speed, clock())  # `began` is set again by the first request
        self.clock = clock
        self._begun = threading.Lock()
        self._began = False
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
        replay = self.replay
        log.info("demo feeds: %d feeds on http://127.0.0.1:%d, replaying %s to %s %g times faster",
                 len(self.feeds), self.port, replay.start, replay.end, replay.speed)  # fmt: skip
        return self

    def replay_now(self) -> tuple[Replay, datetime]:
        """The replay and the real time now; the first call starts the replay's clock."""
        now = self.clock()
        with self._begun:
            if not self._began:
                self.replay, self._began = dataclasses.replace(self.replay, began=now), True
                log.info("demo feeds: the replay began with the first feed request")
            return self.replay, now

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        feeds, replay_now = self.feeds, self.replay_now

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                feed = feeds.get(unquote(urlsplit(self.path).path).rstrip("/"))
                if feed is None:
                    self.send_error(404, "no such feed")
                    return
                replay, now = replay_now()
                snapshot = feed.snapshot_at(replay.position(now))
                if snapshot is None:
                    self.send_response(503, "not published yet")
                    self.send_header("Retry-After", "5")
                    self.end_headers()
                    return
                body = replay.shift(snapshot.read_bytes())
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
