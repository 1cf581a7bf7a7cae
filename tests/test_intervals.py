"""Crawl interval math."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.ingest.intervals import failure_delay_s, rate_from_spread, success_interval_s, updated_rate


def test_interval_is_time_for_five_articles_clamped() -> None:
    assert success_interval_s(60, 5, 60, 900) == 300  # 1/min -> 5 min
    assert success_interval_s(1000, 5, 60, 900) == 60  # fast source: the lower bound
    assert success_interval_s(0.1, 5, 60, 900) == 900  # slow source: the upper bound
    assert success_interval_s(0, 5, 60, 900) == 900


def test_failure_backoff_doubles_and_caps_at_64_minutes() -> None:
    assert [failure_delay_s(n, 6) // 60 for n in range(9)] == [1, 2, 4, 8, 16, 32, 64, 64, 64]


def test_rate_from_a_first_feed_document() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert rate_from_spread([start + timedelta(minutes=10 * k) for k in range(7)]) == 6.0
    assert rate_from_spread([start]) is None
    assert rate_from_spread([start, start]) is None


def test_rate_ema_moves_towards_what_a_fetch_saw() -> None:
    assert updated_rate(10, 0, 1.0, 0.3) == 7.0
    assert updated_rate(10, 30, 1.0, 0.3) == 16.0
    assert updated_rate(10, 5, 0.0, 0.3) == 10
