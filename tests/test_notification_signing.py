"""Webhook signatures and back-off: pure functions, and the standalone verification script agrees with them."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from app.notifications.signing import sign, verify
from app.resilience.backoff import Backoff, RetryPolicy, ceiling, retry_wait
from bench.webhook_receiver import verify_webhook

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "verify_webhook.py"


@given(st.text(min_size=1, max_size=64), st.binary(max_size=2048))
def test_a_signed_body_verifies_and_a_changed_one_does_not(secret: str, body: bytes) -> None:
    header = sign(secret, body, now=1_800_000_000)
    assert verify(secret, header, body, now=1_800_000_000)
    assert verify_webhook.valid(secret, header, body, now=1_800_000_000)  # the standalone script agrees
    assert not verify(secret, header, body + b" ", now=1_800_000_000)
    assert not verify(secret + "x", header, body, now=1_800_000_000)
    assert not verify(secret, header, body, now=1_800_000_000 + 301)  # a replay minutes later


def test_malformed_headers_do_not_verify() -> None:
    for header in ("", "t=", "t=abc,v1=00", "v1=00", "t=1,v1", "," * 1000, "t=" + "9" * 5000):
        assert not verify("s", header, b"{}")


def test_the_script_verifies_a_file_from_the_command_line(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_bytes(b'{"id":"1/2/webhook/3","title":"Dam bursts"}')
    header = sign("whsec_test", body.read_bytes())
    ok = subprocess.run([sys.executable, SCRIPT, "whsec_test", header, body], capture_output=True, text=True)
    bad = subprocess.run([sys.executable, SCRIPT, "whsec_other", header, body], capture_output=True, text=True)
    assert (ok.returncode, ok.stdout.strip()) == (0, "valid")
    assert (bad.returncode, bad.stdout.strip()) == (1, "INVALID")


@given(st.integers(min_value=1, max_value=10_000))
def test_retry_waits_grow_then_stay_under_the_cap(attempt: int) -> None:
    rng = random.Random(attempt)
    wait = retry_wait(attempt, 2.0, 1800.0, rng=rng)
    assert 0 <= wait <= min(1800.0, 2.0 * 2 ** min(attempt - 1, 62))


def test_full_jitter_spreads_retries() -> None:
    rng = random.Random(7)
    waits = [retry_wait(5, 2.0, 1800.0, rng=rng) for _ in range(1000)]
    assert max(waits) > 16 > min(waits)  # spread over (0, 32], not all at one instant


@given(st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=12))
def test_a_failure_is_retried_until_the_last_attempt_then_dead(max_attempts: int, attempt: int) -> None:
    policy = RetryPolicy(max_attempts, 2.0, 1800.0)
    status, wait = policy.settle(attempt, True)
    assert status == ("dead" if attempt >= max_attempts else "failed")
    assert 0 <= wait <= (0 if status == "dead" else ceiling(attempt, 2.0, 1800.0))
    assert policy.settle(attempt, True, permanent=True) == ("dead", 0.0)  # a refused address is never retried
    assert policy.settle(attempt, False) == ("delivered", 0.0)


def test_a_loop_backs_off_doubling_to_its_cap_and_starts_over_after_a_success() -> None:
    backoff = Backoff(first=0.1, cap=5.0)
    waits = [backoff.next_wait() for _ in range(40)]
    assert 0.075 <= waits[0] <= 0.1 < waits[2]
    assert all(3.75 <= w <= 5.0 for w in waits[8:])
    backoff.reset()
    assert backoff.next_wait() <= 0.1
