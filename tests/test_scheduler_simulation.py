"""A simulated day of 10,000 sources through the real scheduling policy (app.ingest.crawl_policy).

Publishing: Poisson, with a day/night rhythm, at rates from one article every few days to two a minute. A feed
document holds its newest 20 entries, so a source polled too slowly loses articles: the simulation counts them.
The crawl tick runs every 15 s; each fetch takes its host's next politeness slot (1 request/s per host).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from app.ingest.crawl_policy import Bounds, CrawlPolicy, CrawlState, FailureKind, after_failure, after_success
from app.settings import Settings
from app.sources.models import SourceStatus

DAY_S = 24 * 3600
TICK_S = 15
FEED_WINDOW = 20
HOST_RATE = 1.0
START = datetime(2026, 11, 2, tzinfo=UTC)
NEWS, BLOG = Bounds(60, 900), Bounds(60, 6 * 3600)


@dataclass
class SimSource:
    kind: str
    rate_per_hour: float
    host: int
    bounds: Bounds
    published: list[float] = field(default_factory=list)  # seconds since START
    state: CrawlState = field(default_factory=CrawlState)
    status: SourceStatus = SourceStatus.ACTIVE
    fetches: list[float] = field(default_factory=list)
    lateness: list[float] = field(default_factory=list)  # actual poll time minus the time the policy asked for
    delays: list[float] = field(default_factory=list)  # publication -> fetch, for each article seen
    missed: int = 0


def diurnal(hour: float) -> float:
    """Mean 1 over a day: quiet at night, busiest in the afternoon (UTC)."""
    return 1 + 0.7 * math.sin((hour - 9) / 24 * 2 * math.pi)


def publish(rng: random.Random, rate_per_hour: float) -> list[float]:
    """A non-homogeneous Poisson process by thinning."""
    peak = rate_per_hour * 1.7 / 3600
    times, t = [], -3600.0 * 6  # a backlog, so first fetches find full documents
    while True:
        t += rng.expovariate(peak)
        if t >= DAY_S:
            return times
        if rng.random() < diurnal((t / 3600) % 24) / 1.7:
            times.append(t)


def population(rng: random.Random, n: int) -> list[SimSource]:
    kinds = [("fast", 0.05, (30, 120), NEWS), ("regular", 0.30, (1, 30), NEWS), ("quiet", 0.52, (0.05, 1), NEWS),
             ("blog", 0.10, (0.005, 0.1), BLOG), ("failing", 0.02, (1, 5), NEWS),
             ("throttled", 0.01, (1, 5), NEWS)]  # fmt: skip
    sources = []
    hosts = publisher_hosts(rng, n)
    for index in range(n):
        kind, _, (low, high), bounds = rng.choices(kinds, weights=[k[1] for k in kinds])[0]
        rate = math.exp(rng.uniform(math.log(low), math.log(high)))
        sources.append(SimSource(kind, rate, hosts[index], bounds, publish(rng, rate)))
    return sources


def publisher_hosts(rng: random.Random, n: int) -> list[int]:
    """20 big publishers with 50-150 feeds each, 500 with 2-10, and every other feed alone on its host."""
    sizes = [rng.randint(50, 150) for _ in range(20)] + [rng.randint(2, 10) for _ in range(500)]
    hosts = [host for host, size in enumerate(sizes) for _ in range(size)][:n]
    hosts += range(len(sizes), len(sizes) + n - len(hosts))
    rng.shuffle(hosts)
    return hosts


def fetch(source: SimSource, now_s: float, policy: CrawlPolicy) -> float:
    """One poll: what the document shows, what the policy decides; returns the next due time."""
    now = START + timedelta(seconds=now_s)
    source.fetches.append(now_s)
    if source.kind in ("failing", "throttled"):
        kind = FailureKind.STRIKE if source.kind == "failing" else FailureKind.THROTTLED
        decision = after_failure(source.state, policy, now=now, kind=kind,
                                 retry_after_s=1800 if source.kind == "throttled" else None)  # fmt: skip
    else:
        upto = bisect.bisect_right(source.published, now_s)
        visible = source.published[max(upto - FEED_WINDOW, 0) : upto]
        last = source.fetches[-2] if len(source.fetches) > 1 else None
        new = [t for t in visible if last is None or t > last]
        if last is not None:
            source.missed += upto - bisect.bisect_right(source.published, last) - len(new)
            source.delays.extend(now_s - t for t in new)
        decision = after_success(
            source.state, source.bounds, policy, now=now,
            new_published=[START + timedelta(seconds=t) for t in new],
            document_published=[START + timedelta(seconds=t) for t in visible],
            publisher_delay_s=0, feed_url="u", permanent_url=None,
        )  # fmt: skip
    source.state, source.status = decision.state, decision.source_status
    return (decision.next_crawl_at - START).total_seconds()


def simulate(sources: list[SimSource]) -> dict[int, list[float]]:
    policy = CrawlPolicy.from_settings(Settings(_env_file=None))  # type: ignore[call-arg]
    due = [(0.0, index) for index in range(len(sources))]
    heapq.heapify(due)
    host_free: dict[int, float] = defaultdict(float)
    host_fetches: dict[int, list[float]] = defaultdict(list)
    while due and due[0][0] < DAY_S:
        when, index = heapq.heappop(due)
        tick = math.ceil(when / TICK_S) * TICK_S  # claimed at the next crawl tick
        source = sources[index]
        at = max(tick, host_free[source.host])  # the host's next politeness slot
        host_free[source.host] = at + 1 / HOST_RATE
        host_fetches[source.host].append(at)
        source.lateness.append(at - when)
        next_due = fetch(source, at, policy)
        if source.status == SourceStatus.ACTIVE:
            heapq.heappush(due, (next_due, index))
    return host_fetches


@pytest.fixture(scope="module")
def day() -> tuple[list[SimSource], dict[int, list[float]]]:
    rng = random.Random(20261121)
    sources = population(rng, 10_000)
    return sources, simulate(sources)


def by_kind(sources: list[SimSource], kind: str) -> list[SimSource]:
    return [s for s in sources if s.kind == kind]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def test_fast_sources_are_polled_within_their_interval(day: tuple[list[SimSource], dict[int, list[float]]]) -> None:
    sources, _ = day
    fast = by_kind(sources, "fast")
    lateness = [late for s in fast for late in s.lateness[1:]]
    assert percentile(lateness, 0.99) <= TICK_S + 5  # the next tick, give or take a politeness slot
    delays = [d for s in fast for d in s.delays]
    assert percentile(delays, 0.5) < 180  # seconds from publication to fetch: ~5 articles' time, halved
    assert percentile(delays, 0.95) < 600
    published = sum(len(s.delays) + s.missed for s in fast)
    assert sum(s.missed for s in fast) / published < 1e-4  # almost nothing falls off a 20-item feed unseen


def test_every_news_source_keeps_up(day: tuple[list[SimSource], dict[int, list[float]]]) -> None:
    sources, _ = day
    for kind in ("regular", "quiet"):
        group = by_kind(sources, kind)
        assert sum(s.missed for s in group) == 0, kind
        assert percentile([d for s in group for d in s.delays], 0.95) < 15 * 60 + TICK_S + 60, kind


def test_quiet_sources_are_polled_rarely(day: tuple[list[SimSource], dict[int, list[float]]]) -> None:
    sources, _ = day
    polls = {kind: sum(len(s.fetches) for s in by_kind(sources, kind)) / len(by_kind(sources, kind))
             for kind in ("fast", "regular", "quiet", "blog")}  # fmt: skip
    assert polls["fast"] > 200  # every 2.5 to 10 minutes: the time for ~5 new articles
    assert polls["quiet"] <= 24 * 4 + 2  # every 15 minutes at most: the news bound
    assert polls["blog"] < 24  # left to drift towards hours
    assert polls["fast"] > polls["regular"] > polls["quiet"] > polls["blog"]


def test_no_host_exceeds_its_rate(day: tuple[list[SimSource], dict[int, list[float]]]) -> None:
    _, host_fetches = day
    for times in host_fetches.values():
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert min(gaps, default=1.0) >= 1 / HOST_RATE - 1e-9
    busiest = max(host_fetches.values(), key=len)
    assert len(busiest) > 10_000  # the simulation does load single hosts


def test_failing_sources_back_off_then_pause_and_throttled_ones_stay(
    day: tuple[list[SimSource], dict[int, list[float]]],
) -> None:
    sources, _ = day
    for source in by_kind(sources, "failing"):
        assert len(source.fetches) == 10  # 10 strikes, backing off 2, 4, ... 64 min, then paused
        assert source.status == SourceStatus.PAUSED
        gaps = [b - a for a, b in itertools.pairwise(source.fetches)]
        assert all(later >= earlier - TICK_S for earlier, later in itertools.pairwise(gaps))  # up to tick rounding
    for source in by_kind(sources, "throttled"):
        assert source.status == SourceStatus.ACTIVE
        assert len(source.fetches) <= DAY_S / 1800 + 1  # never sooner than Retry-After
