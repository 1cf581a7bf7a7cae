"""The demo's timeline: which stretch of saved snapshots it replays, how fast, and the dates it serves them with.

Snapshots carry their fetch time in their name (`20210920T010329Z_....xml`; else the file's modification time). The
replay plays the busiest stretch of `hours` (most snapshots) on a compressed clock: `speed` seconds of the
snapshots' time pass each real second. Every date in a snapshot (RSS pubDate/lastBuildDate, Atom and YouTube
published/updated, dc:date) moves by one offset, chosen so the stretch's last snapshot lands at the moment the
replay began: the gaps between articles stay as they were, no date is ever in the future, and the stories, the
trending counts and velocity (which counts arrivals on the real clock) see the news arrive `speed` times faster.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path

_STAMP = re.compile(r"^(\d{8}T\d{6}Z)")
_DATED = re.compile(rb"(<(pubDate|lastBuildDate|published|updated|dc:date|a10:updated|atom:updated)(?:\s[^>]*)?>)"
                    rb"\s*([^<]{6,60}?)\s*(</\2>)")  # fmt: skip


def fetched_at(snapshot: Path) -> datetime:
    """When a snapshot was taken: the time its name begins with, else its modification time."""
    return stamped(snapshot.name) or datetime.fromtimestamp(snapshot.stat().st_mtime, UTC)


def stamped(name: str) -> datetime | None:
    """The fetch time a snapshot's name begins with (`20210920T010329Z_....xml`), if it does."""
    if match := _STAMP.match(name):
        return datetime.strptime(match.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return None


@dataclass(frozen=True)
class Replay:
    start: datetime  # the snapshots' time the replay begins at ...
    end: datetime  # ... and ends at; `end` lands at `began`
    speed: float
    began: datetime

    @classmethod
    def busiest(cls, times: Sequence[datetime], hours: float, speed: float, began: datetime) -> Replay:
        """The stretch of `hours` holding the most snapshots (the earliest such)."""
        ordered, span = sorted(times), timedelta(hours=hours)
        first = best_first = best_last = 0
        for last, at in enumerate(ordered):
            while at - ordered[first] > span:
                first += 1
            if last - first > best_last - best_first:
                best_first, best_last = first, last
        return cls(ordered[best_first], ordered[best_last], speed, began)

    @property
    def offset(self) -> timedelta:
        return self.began - self.end

    def position(self, now: datetime) -> datetime:
        """The snapshots' time the replay has reached at real time `now` (it stops at the stretch's end)."""
        return min(self.start + (now - self.began) * self.speed, self.end)

    def shift(self, body: bytes) -> bytes:
        """The snapshot with every date it carries moved by the offset (dates it cannot read stay as they are)."""
        return _DATED.sub(lambda m: m.group(1) + _shifted(m.group(3), self.offset) + m.group(4), body)


def _shifted(raw: bytes, offset: timedelta) -> bytes:
    text = raw.decode("ascii", "replace").strip()
    try:
        return format_datetime(parsedate_to_datetime(text) + offset).encode()
    except (TypeError, ValueError, IndexError):
        pass
    try:
        return (datetime.fromisoformat(text.replace("Z", "+00:00")) + offset).isoformat().encode()
    except ValueError:
        return raw
