"""What a source's fields may hold (app/sources/rules.py): any input is either a clean value within bounds or a
refusal naming its field, never an exception of another kind or a value the database would refuse."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.sources import rules
from app.sources.errors import SourceErrorCode, SourceRejected

ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**30), 10**30).map(float)


def _outcome(check: Callable[..., Any], *args: Any) -> Any:
    """The checked value, or the refusal."""
    try:
        return check(*args)
    except SourceRejected as refusal:
        return refusal


@given(st.text())
def test_a_name_is_clean_and_bounded_or_refused(raw: str) -> None:
    name = _outcome(rules.checked_name, raw)
    if isinstance(name, SourceRejected):
        assert (name.code, name.field) == (SourceErrorCode.INVALID, "name")
        return
    assert 1 <= len(name) <= rules.MAX_NAME
    assert name == name.strip()
    assert not any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in name)


@given(st.one_of(st.none(), st.text()))
def test_a_language_is_a_lowercase_code_or_refused(raw: str | None) -> None:
    code = _outcome(rules.checked_language, raw)
    if isinstance(code, SourceRejected):
        assert code.field == "language"
    elif code is not None:
        assert len(code) <= rules.MAX_LANGUAGE
        assert rules.LANGUAGE.fullmatch(code)
        assert code == code.lower()


@given(ANY_FLOAT, ANY_FLOAT)
def test_intervals_fit_the_schedule_or_are_refused(low: float, high: float) -> None:
    seconds = _outcome(rules.interval_seconds, low, high)
    if isinstance(seconds, SourceRejected):
        assert seconds.field in ("minIntervalMinutes", "maxIntervalMinutes")
        return
    assert 60 <= seconds[0] <= seconds[1] <= rules.MAX_INTERVAL_MINUTES * 60 < 2**31  # the CHECK, the int column


@given(ANY_FLOAT)
def test_authority_is_between_0_and_1_or_refused(value: float) -> None:
    authority = _outcome(rules.checked_authority, value)
    if isinstance(authority, SourceRejected):
        assert authority.field == "authority"
        assert math.isnan(value) or not 0.0 <= value <= 1.0
    else:
        assert 0.0 <= authority <= 1.0


@pytest.mark.parametrize("code", ["en", "fr", "pt-br", "zh-hant-tw", "EN-GB"])
def test_language_codes_feeds_use_are_accepted(code: str) -> None:
    assert rules.checked_language(code) == code.lower()
