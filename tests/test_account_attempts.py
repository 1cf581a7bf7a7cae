"""logIn, signUp and apiKeyCreate have buckets of their own, per client address and per account, stricter than the
points budget; an attempt they refuse hashes no password."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
from prometheus_client import REGISTRY

from app.services import Services
from app.settings import Settings
from app.users.passwords import dummy_hash
from app.users.service import sign_up as create_account
from tests.conftest import document
from tests.test_rate_limits import limited_api, post

PASSWORD = "correct horse battery"
ATTEMPTS = {"account_attempts_per_account": 3, "account_attempts_per_address": 10,
            "account_attempts_window_seconds": 600}  # fmt: skip


def hashes() -> float:
    dummy_hash()  # made once per process, on first use: not an attempt's work
    return REGISTRY.get_sample_value("newsagg_password_hashes_total") or 0.0


async def log_in(http: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    return await post(http, document("LogIn"), {"input": {"email": email, "password": password}})


def outcome(response: httpx.Response) -> str:
    body: dict[str, Any] = response.json()
    if body.get("errors"):
        return str(body["errors"][0]["extensions"]["code"])
    payload = next(iter(body["data"].values()))
    return str(payload["errors"][0]["code"]) if payload["errors"] else "OK"


async def sign_up(services: Services, email: str) -> None:
    async with services.db.begin() as session:
        await create_account(session, email, PASSWORD, timedelta(days=1))


async def test_fifty_wrong_passwords_then_the_right_one_is_refused_until_the_bucket_refills(
    services: Services, settings: Settings
) -> None:
    await sign_up(services, "victim@example.com")
    async with limited_api(settings, **(ATTEMPTS | {"account_attempts_window_seconds": 12})) as http:
        before = hashes()
        wrong = [await log_in(http, "victim@example.com", f"guess number {i}") for i in range(50)]
        hashed = hashes() - before
        right = await log_in(http, "Victim@Example.com ", PASSWORD)  # the same account, spelled otherwise
        outcomes = [outcome(a) for a in wrong]
        assert outcomes[:3] == ["INVALID_CREDENTIALS"] * 3
        assert outcomes.count("RATE_LIMITED") >= 45
        assert hashed == outcomes.count("INVALID_CREDENTIALS")  # no scrypt for a refused attempt
        assert (right.status_code, outcome(right)) == (429, "RATE_LIMITED")
        assert hashes() - before == hashed
        retry_after = int(right.headers["retry-after"])
        assert 1 <= retry_after <= 4  # one attempt refills in 12 s / 3 (or 12 s / 10 for the address)
        for _ in range(3):  # the address's bucket, then the account's, may each ask for a wait
            await asyncio.sleep(retry_after)
            right = await log_in(http, "victim@example.com", PASSWORD)
            if right.status_code != 429:
                break
            retry_after = int(right.headers["retry-after"])
    assert outcome(right) == "OK"


async def test_one_address_trying_many_accounts_is_refused_past_its_bucket(services: Services,
                                                                            settings: Settings) -> None:  # fmt: skip
    async with limited_api(settings, **ATTEMPTS) as http:
        before = hashes()
        answers = [await log_in(http, f"nobody{i}@example.com", PASSWORD) for i in range(30)]
        hashed = hashes() - before
    outcomes = [outcome(a) for a in answers]
    assert outcomes == ["INVALID_CREDENTIALS"] * 10 + ["RATE_LIMITED"] * 20
    assert hashed == outcomes.count("INVALID_CREDENTIALS")


async def test_sign_ups_from_one_address_are_bounded(services: Services, settings: Settings) -> None:
    async with limited_api(settings, **ATTEMPTS) as http:
        answers = [await post(http, document("SignUp"), {"input": {"email": f"new{i}@example.com",
                                                                   "password": PASSWORD}})
                   for i in range(12)]  # fmt: skip
    assert [outcome(a) for a in answers] == ["OK"] * 10 + ["RATE_LIMITED"] * 2


async def test_api_keys_per_account_are_bounded(services: Services, settings: Settings) -> None:
    async with limited_api(settings, **ATTEMPTS) as http:
        signed = await post(http, document("SignUp"), {"input": {"email": "app@example.com", "password": PASSWORD}})
        bearer = {"authorization": f"Bearer {signed.json()['data']['signUp']['token']}"}
        made = [await post(http, document("ApiKeyCreate"), {"name": f"k{i}"}, **bearer) for i in range(5)]
    assert [a.status_code for a in made] == [200, 200, 200, 429, 429]
    assert made[3].json()["errors"][0]["extensions"]["code"] == "RATE_LIMITED"
