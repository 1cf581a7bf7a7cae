"""Trending time buckets, pure: the bucket an instant falls in, and the weighted buckets that make up a window.

Every count goes into buckets of three sizes (1 min, 10 min, 1 h). A window is read from the finest size that
covers it in at most `MAX_BUCKETS` buckets (15 min and 1 h: minutes; 6 h: 10 minutes; 24 h: hours), so a read
touches at most 60 keys per signal whatever the window, and minute buckets need only live an hour. The current,
still filling bucket is part of the window, so a window of N buckets spans between N-1 and N bucket lengths.

Buckets weigh less as they age, linearly from 1 (the current bucket) to 1/N (the oldest): a story's score fades
as its activity recedes instead of dropping by a whole bucket's worth when that bucket leaves the window.
"""

from __future__ import annotations

import enum
import math
from datetime import datetime, timedelta

BUCKET_SECONDS = (60, 600, 3600)
MAX_BUCKETS = 60
LONGEST = timedelta(hours=24)
MARGIN_BUCKETS = 2  # kept a little past the longest window they serve (clock skew between processes)


class TrendingWindow(enum.StrEnum):
    FIFTEEN_MINUTES = "15m"
    HOUR = "1h"
    SIX_HOURS = "6h"
    DAY = "24h"

    @property
    def span(self) -> timedelta:
        return SPANS[self]


SPANS = {
    TrendingWindow.FIFTEEN_MINUTES: timedelta(minutes=15),
    TrendingWindow.HOUR: timedelta(hours=1),
    TrendingWindow.SIX_HOURS: timedelta(hours=6),
    TrendingWindow.DAY: timedelta(hours=24),
}


def bucket_seconds(window: timedelta) -> int:
    """The finest bucket size that covers `window` in at most MAX_BUCKETS buckets."""
    if not timedelta(0) < window <= LONGEST:
        raise ValueError(f"a trending window is longer than 0 and at most {LONGEST}, not {window}")
    return next(size for size in BUCKET_SECONDS if math.ceil(window.total_seconds() / size) <= MAX_BUCKETS)


def retention_seconds(size: int) -> int:
    """How long a bucket of `size` seconds is kept: the longest window read from it, and a margin."""
    longest_read = min(MAX_BUCKETS * size, int(LONGEST.total_seconds()))
    return longest_read + MARGIN_BUCKETS * size


def bucket_of(at: datetime, size: int) -> int:
    return int(at.timestamp()) // size


def window_buckets(window: timedelta, now: datetime) -> tuple[int, list[tuple[int, float]]]:
    """The bucket size, and (bucket, weight) for each bucket of the window, newest first."""
    size = bucket_seconds(window)
    count = math.ceil(window.total_seconds() / size)
    current = bucket_of(now, size)
    return size, [(current - age, (count - age) / count) for age in range(count)]
