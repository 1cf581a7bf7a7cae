"""What happens to a source after a fetch: next time, circuit, death or pause, a moved feed URL (pure).

Success: the interval is the time for ~5 new articles at the source's EMA rate, shortened in its peak hours,
clamped to its bounds, and never sooner than the publisher asked. Failure: 2^n minutes, a circuit that opens after
5 strikes in a row (the next attempt is the half-open probe), pause after 10; death after 404/410 answers alone for
a day (at least 3 of them): a deploy's brief 404s, three in six minutes at that back-off, kill no source.
A 429/503 backs off without a strike.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from app.ingest.intervals import failure_delay_s, rate_from_spread, success_interval_s, updated_rate
from app.settings import Settings
from app.sources.models import Circuit, SourceStatus

HISTOGRAM_RESCALE_AT = 5000  # halve the hour counts past this total, so old habits fade


class FailureKind(enum.StrEnum):
    STRIKE = "strike"  # counts towards the circuit and the pause
    GONE = "gone"  # 404/410: a strike, and towards death once confirmed
    THROTTLED = "throttled"  # 429/503: back off, no strike


@dataclass(frozen=True, slots=True)
class CrawlPolicy:
    target_new_articles: float
    rate_ema_alpha: float
    backoff_cap_exponent: int
    circuit_opens_after: int
    pause_after_failures: int
    dead_after_gone: int
    dead_after_gone_s: float
    hint_max_s: float
    peak_max_speedup: float
    redirect_stable_after: int

    @classmethod
    def from_settings(cls, s: Settings) -> CrawlPolicy:
        return cls(
            target_new_articles=s.crawl_target_new_articles,
            rate_ema_alpha=s.crawl_rate_ema_alpha,
            backoff_cap_exponent=s.crawl_backoff_cap_exponent,
            circuit_opens_after=s.crawl_circuit_opens_after,
            pause_after_failures=s.crawl_pause_after_failures,
            dead_after_gone=s.crawl_dead_after_gone,
            dead_after_gone_s=s.crawl_dead_after_gone_hours * 3600,
            hint_max_s=s.crawl_hint_max_hours * 3600,
            peak_max_speedup=s.crawl_peak_max_speedup,
            redirect_stable_after=s.crawl_redirect_stable_after,
        )


@dataclass(frozen=True, slots=True)
class CrawlState:
    articles_per_hour: float = 0.0
    hourly_histogram: tuple[int, ...] = (0,) * 24
    last_fetched_at: datetime | None = None
    consecutive_failures: int = 0
    gone_streak: int = 0
    gone_since: datetime | None = None  # the first 404/410 of the streak
    throttle_streak: int = 0
    circuit: Circuit = Circuit.CLOSED
    redirect_url: str | None = None
    redirect_streak: int = 0


@dataclass(frozen=True, slots=True)
class Bounds:
    min_interval_s: int
    max_interval_s: int


@dataclass(frozen=True, slots=True)
class Decision:
    state: CrawlState
    next_crawl_at: datetime
    source_status: SourceStatus = SourceStatus.ACTIVE
    move_feed_to: str | None = None
    notes: list[str] = field(default_factory=list)


def peak_factor(histogram: tuple[int, ...], hour: int, max_speedup: float) -> float:
    """How much busier this hour is than the source's average hour (1 when unknown or quiet)."""
    total = sum(histogram)
    if total < 48:  # too little history to call any hour a peak
        return 1.0
    return min(max(histogram[hour] * 24 / total, 1.0), max_speedup)


def _with_new_articles(histogram: tuple[int, ...], published: list[datetime]) -> tuple[int, ...]:
    counts = list(histogram)
    for when in published:
        counts[when.hour] += 1
    if sum(counts) > HISTOGRAM_RESCALE_AT:
        counts = [c // 2 for c in counts]
    return tuple(counts)


def after_success(
    state: CrawlState,
    bounds: Bounds,
    policy: CrawlPolicy,
    *,
    now: datetime,
    new_published: list[datetime],
    document_published: list[datetime],
    publisher_delay_s: float,
    feed_url: str,
    permanent_url: str | None,
) -> Decision:
    """`new_published`: dates of the articles this fetch added; `document_published`: of all entries it held."""
    if state.last_fetched_at is None:
        rate = rate_from_spread(document_published) or 0.0
    else:
        rate = _sampled_rate(state, policy, now, len(new_published))
    histogram = _with_new_articles(state.hourly_histogram, new_published)
    interval: float = success_interval_s(rate, policy.target_new_articles, bounds.min_interval_s, bounds.max_interval_s)
    interval = max(interval / peak_factor(histogram, now.hour, policy.peak_max_speedup), bounds.min_interval_s)
    interval = max(interval, min(publisher_delay_s, policy.hint_max_s))
    redirect_url, streak, move_to = _redirect(state, policy, feed_url, permanent_url)
    new_state = CrawlState(
        articles_per_hour=rate,
        hourly_histogram=histogram,
        last_fetched_at=_clock(state, now),
        redirect_url=redirect_url,
        redirect_streak=streak,
    )
    return Decision(new_state, now + timedelta(seconds=interval), move_feed_to=move_to)


def after_push(state: CrawlState, policy: CrawlPolicy, *, now: datetime, new_published: list[datetime]) -> CrawlState:
    """A hub pushed the articles published at `new_published`: they count towards the source's rate (its clock,
    `last_fetched_at`, moves on as after a poll) and its hours. Nothing else changes: a push says nothing of whether
    the feed's URL answers, so failures, circuit, back-off and redirect streak are the polls' alone."""
    rate = _sampled_rate(state, policy, now, len(new_published))
    histogram = _with_new_articles(state.hourly_histogram, new_published)
    return replace(state, articles_per_hour=rate, hourly_histogram=histogram, last_fetched_at=_clock(state, now))


def _sampled_rate(state: CrawlState, policy: CrawlPolicy, now: datetime, new_articles: int) -> float:
    """The rate with one more sample: `new_articles` found at `now` since the rate's clock. An outcome from before the
    clock (a poll whose request went out before a push that was stored while it ran) adds no sample: its articles
    still count in the hours."""
    elapsed_h = (now - state.last_fetched_at).total_seconds() / 3600 if state.last_fetched_at else 0.0
    return updated_rate(state.articles_per_hour, new_articles, elapsed_h, policy.rate_ema_alpha)


def _clock(state: CrawlState, now: datetime) -> datetime:
    """The rate's clock after an outcome found at `now`: it never goes back (to a poll's request time, from a push
    stored while that poll ran), or the next sample would measure the push's interval twice."""
    return now if state.last_fetched_at is None else max(now, state.last_fetched_at)


def _redirect(
    state: CrawlState, policy: CrawlPolicy, feed_url: str, permanent_url: str | None
) -> tuple[str | None, int, str | None]:
    """A permanent redirect moves the stored URL once the same target has been seen N fetches in a row."""
    if permanent_url is None or permanent_url == feed_url:
        return None, 0, None
    streak = state.redirect_streak + 1 if state.redirect_url == permanent_url else 1
    if streak >= policy.redirect_stable_after:
        return None, 0, permanent_url
    return permanent_url, streak, None


def after_failure(
    state: CrawlState,
    policy: CrawlPolicy,
    *,
    now: datetime,
    kind: FailureKind,
    retry_after_s: float | None,
) -> Decision:
    if kind is FailureKind.THROTTLED:
        throttles = state.throttle_streak + 1
        delay = max(retry_after_s or 0.0, failure_delay_s(throttles, policy.backoff_cap_exponent))
        delay = min(delay, policy.hint_max_s)
        return Decision(replace(state, throttle_streak=throttles), now + timedelta(seconds=delay))
    failures = state.consecutive_failures + 1
    gone = state.gone_streak + 1 if kind is FailureKind.GONE else 0
    gone_since = (state.gone_since or now) if gone else None  # a streak from before gone_since was kept starts now
    circuit = Circuit.OPEN if failures >= policy.circuit_opens_after else Circuit.CLOSED
    delay = max(failure_delay_s(failures, policy.backoff_cap_exponent), min(retry_after_s or 0.0, policy.hint_max_s))
    new_state = replace(state, consecutive_failures=failures, gone_streak=gone, gone_since=gone_since,
                        circuit=circuit, throttle_streak=0)  # fmt: skip
    status = _status_after_failure(policy, failures, gone, gone_since, now)
    return Decision(new_state, now + timedelta(seconds=delay), source_status=status)


def _status_after_failure(
    policy: CrawlPolicy, failures: int, gone: int, gone_since: datetime | None, now: datetime
) -> SourceStatus:
    """Dead once 404/410 alone have answered for `dead_after_gone_s`, at least `dead_after_gone` times. Such a streak
    is left to that rule rather than paused after `pause_after_failures` (at the back-off's cap it would be paused
    long before it could be confirmed); any other run of failures is."""
    lasted_s = (now - gone_since).total_seconds() if gone_since is not None else 0.0
    if gone >= policy.dead_after_gone and lasted_s >= policy.dead_after_gone_s:
        return SourceStatus.DEAD
    if failures >= policy.pause_after_failures and gone < failures:
        return SourceStatus.PAUSED
    return SourceStatus.ACTIVE
