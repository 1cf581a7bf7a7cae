"""Scheduling decisions after a fetch (pure): adaptive intervals, peaks, hints, back-off, circuit, death."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from app.ingest.crawl_policy import (
    Bounds,
    CrawlPolicy,
    CrawlState,
    FailureKind,
    after_failure,
    after_push,
    after_success,
    peak_factor,
)
from app.ingest.hints import parse_retry_after, publisher_delay_s
from app.settings import Settings
from app.sources.models import Circuit, SourceStatus

POLICY = CrawlPolicy.from_settings(Settings(_env_file=None))  # type: ignore[call-arg]
BOUNDS = Bounds(60, 900)
NOW = datetime(2026, 11, 21, 15, 0, tzinfo=UTC)


def success(state: CrawlState, new: int = 0, hint: float = 0.0, permanent: str | None = None):  # type: ignore[no-untyped-def]
    return after_success(
        state, BOUNDS, POLICY, now=NOW, new_published=[NOW] * new, document_published=[],
        publisher_delay_s=hint, feed_url="https://a.example/feed", permanent_url=permanent,
    )  # fmt: skip


def interval(decision) -> float:  # type: ignore[no-untyped-def]
    return float((decision.next_crawl_at - NOW).total_seconds())


def test_first_fetch_rate_comes_from_the_documents_dates() -> None:
    dates = [NOW - timedelta(minutes=5 * k) for k in range(13)]  # 12 per hour
    decision = after_success(CrawlState(), BOUNDS, POLICY, now=NOW, new_published=dates, document_published=dates,
                             publisher_delay_s=0, feed_url="u", permanent_url=None)  # fmt: skip
    assert decision.state.articles_per_hour == 12
    assert interval(decision) == 900  # 5 articles at 12/h = 25 min, clamped to the 15 min bound


def test_fast_and_slow_sources() -> None:
    fast = CrawlState(articles_per_hour=600, last_fetched_at=NOW - timedelta(minutes=1))
    assert interval(success(fast, new=10)) == 60  # the lower bound
    quiet = CrawlState(articles_per_hour=0.1, last_fetched_at=NOW - timedelta(hours=2))
    assert interval(success(quiet)) == 900  # the upper bound


def test_peak_hours_shorten_the_interval() -> None:
    flat = (10,) * 24
    peaky = tuple(100 if hour == NOW.hour else 5 for hour in range(24))
    assert peak_factor(flat, NOW.hour, 3) == 1.0
    assert peak_factor(peaky, NOW.hour, 3) == 3.0
    assert peak_factor(peaky, (NOW.hour + 1) % 24, 3) == 1.0
    assert peak_factor((1,) + (0,) * 23, 0, 3) == 1.0  # too little history
    base = CrawlState(articles_per_hour=30, last_fetched_at=NOW - timedelta(minutes=10))
    assert interval(success(replace(base, hourly_histogram=peaky), new=5)) < interval(success(base, new=5))


def test_never_sooner_than_the_publisher_asked_within_a_cap() -> None:
    busy = CrawlState(articles_per_hour=600, last_fetched_at=NOW - timedelta(minutes=1))
    assert interval(success(busy, new=10, hint=1800)) == 1800  # beyond our upper bound: the publisher wins
    assert interval(success(busy, new=10, hint=10 * 86400)) == POLICY.hint_max_s


def test_failures_back_off_open_the_circuit_and_pause() -> None:
    state = CrawlState()
    delays, circuits = [], []
    for _ in range(10):
        decision = after_failure(state, POLICY, now=NOW, kind=FailureKind.STRIKE, retry_after_s=None)
        state = decision.state
        delays.append(interval(decision) / 60)
        circuits.append(decision.state.circuit)
    assert delays == [2, 4, 8, 16, 32, 64, 64, 64, 64, 64]
    assert circuits[:4] == [Circuit.CLOSED] * 4
    assert circuits[4:] == [Circuit.OPEN] * 6
    assert decision.source_status == SourceStatus.PAUSED
    recovered = success(replace(state, circuit=Circuit.HALF_OPEN), new=1)
    assert recovered.state.circuit == Circuit.CLOSED
    assert recovered.state.consecutive_failures == 0


def gone_until_judged(state: CrawlState, start: datetime) -> list[tuple[datetime, SourceStatus]]:
    """404s answered at each back-off, as the crawl would fetch them, until the source is no longer active."""
    answers, now = [], start
    while True:
        decision = after_failure(state, POLICY, now=now, kind=FailureKind.GONE, retry_after_s=None)
        answers.append((now, decision.source_status))
        if decision.source_status != SourceStatus.ACTIVE or len(answers) > 1000:
            return answers
        state, now = decision.state, decision.next_crawl_at


def test_a_deploys_brief_404s_kill_no_source() -> None:
    # given a feed answering 404 three times, at 0, 2 and 6 minutes (its back-off), then its feed again
    state = CrawlState()
    for _ in range(3):
        decision = after_failure(state, POLICY, now=NOW, kind=FailureKind.GONE, retry_after_s=None)
        state = decision.state
    # then it is still active, its streak dated from the first 404, which a success forgets
    assert decision.source_status == SourceStatus.ACTIVE
    assert (state.gone_streak, state.gone_since) == (3, NOW)
    recovered = success(state, new=1)
    assert (recovered.state.gone_streak, recovered.state.gone_since) == (0, None)


def test_404s_alone_for_a_day_are_dead_and_not_paused_before() -> None:
    answers = gone_until_judged(CrawlState(), NOW)
    (last, status), statuses = answers[-1], [status for _, status in answers[:-1]]
    assert status == SourceStatus.DEAD
    assert NOW + timedelta(hours=24) <= last < NOW + timedelta(hours=24, minutes=65)  # at the back-off's cap
    assert set(statuses) == {SourceStatus.ACTIVE}  # more than 10 failures in a row, and never paused
    assert len(answers) > POLICY.pause_after_failures


def test_a_404_streak_is_ended_by_another_error_and_mixed_failures_pause() -> None:
    long_gone = replace(CrawlState(), consecutive_failures=20, gone_streak=20, gone_since=NOW - timedelta(days=2))
    interrupted = after_failure(long_gone, POLICY, now=NOW, kind=FailureKind.STRIKE, retry_after_s=None)
    assert (interrupted.state.gone_streak, interrupted.state.gone_since) == (0, None)
    assert interrupted.source_status == SourceStatus.PAUSED  # 21 failures in a row, not all of them 404/410
    # a streak kept before its start was recorded (gone_since unknown) starts its clock at its next 404
    legacy = after_failure(replace(CrawlState(), gone_streak=5, consecutive_failures=5), POLICY, now=NOW,
                           kind=FailureKind.GONE, retry_after_s=None)  # fmt: skip
    assert (legacy.source_status, legacy.state.gone_since) == (SourceStatus.ACTIVE, NOW)


def test_throttling_backs_off_without_a_strike() -> None:
    state = CrawlState()
    for _ in range(20):  # Miniflux gives up after three 429s; we keep the source and keep backing off
        decision = after_failure(state, POLICY, now=NOW, kind=FailureKind.THROTTLED, retry_after_s=120)
        state = decision.state
    assert decision.source_status == SourceStatus.ACTIVE
    assert state.consecutive_failures == 0
    assert state.circuit == Circuit.CLOSED
    first = after_failure(CrawlState(), POLICY, now=NOW, kind=FailureKind.THROTTLED, retry_after_s=600)
    assert interval(first) == 600  # Retry-After honoured


def test_a_permanent_redirect_moves_the_url_once_stable() -> None:
    state = CrawlState()
    moves = []
    for _ in range(3):
        decision = success(state, permanent="https://a.example/new")
        state = decision.state
        moves.append(decision.move_feed_to)
    assert moves == [None, None, "https://a.example/new"]
    flapping = success(replace(CrawlState(), redirect_url="https://a.example/x", redirect_streak=2),
                       permanent="https://a.example/y")  # fmt: skip
    assert (flapping.state.redirect_url, flapping.state.redirect_streak, flapping.move_feed_to) == (
        "https://a.example/y", 1, None)  # fmt: skip


def test_hints() -> None:
    assert parse_retry_after("120") == 120
    assert parse_retry_after("Sat, 21 Nov 2026 15:10:00 GMT", NOW) == 600
    assert parse_retry_after("soon") is None
    assert publisher_delay_s({"cache-control": "public, max-age=300"}, None, NOW) == 300
    assert publisher_delay_s({"cache-control": "max-age=60", "expires": "Sat, 21 Nov 2026 16:00:00 GMT"},
                             None, NOW) == 60  # max-age wins over Expires  # fmt: skip
    assert publisher_delay_s({"expires": "Sat, 21 Nov 2026 15:30:00 GMT"}, None, NOW) == 1800
    assert publisher_delay_s({}, "45", NOW) == 2700
    assert publisher_delay_s({"expires": "0"}, "x", NOW) == 0


def test_hostile_hints_are_capped_or_ignored() -> None:
    assert parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", NOW) == 366 * 86400
    assert parse_retry_after("9" * 400) == 366 * 86400  # not inf, which no datetime can add
    assert parse_retry_after("\u00b2") is None  # "²".isdigit(), but float() refuses it
    assert parse_retry_after("\u0663") is None  # an Arabic-Indic three: not what HTTP means by a digit
    assert publisher_delay_s({"retry-after": "\u00b2"}, "\u00b2", NOW) == 0
    assert publisher_delay_s({"expires": "Fri, 31 Dec 9999 23:59:59 GMT"}, "9" * 5000, NOW) == 366 * 86400
    for kind in (FailureKind.STRIKE, FailureKind.GONE, FailureKind.THROTTLED):
        decision = after_failure(CrawlState(), POLICY, now=NOW, kind=kind, retry_after_s=10 * 86400)
        assert interval(decision) == POLICY.hint_max_s, kind


def test_a_poll_stored_after_a_push_that_arrived_while_it_fetched_keeps_the_rate_clock() -> None:
    """A poll's clock is when its request went out; a push stored while the request ran has moved the rate's clock
    past it. The clock stays there (moved back, the next sample would measure the push's interval again), the poll's
    articles add no rate sample, and they count in the hours."""
    start = NOW - timedelta(hours=1)
    pushed = after_push(CrawlState(articles_per_hour=4.0, last_fetched_at=start), POLICY,
                        now=NOW + timedelta(seconds=5), new_published=[NOW])  # fmt: skip
    polled = success(pushed, new=3).state  # the poll's request went out at NOW, before the push was stored
    assert polled.last_fetched_at == NOW + timedelta(seconds=5)
    assert polled.articles_per_hour == pushed.articles_per_hour
    assert sum(polled.hourly_histogram) == sum(pushed.hourly_histogram) + 3
    later = after_push(polled, POLICY, now=NOW + timedelta(minutes=30, seconds=5), new_published=[NOW] * 2)
    # one sample over the 30 minutes since the clock: 2 articles in half an hour
    assert (
        later.articles_per_hour == POLICY.rate_ema_alpha * 4.0 + (1 - POLICY.rate_ema_alpha) * polled.articles_per_hour
    )
