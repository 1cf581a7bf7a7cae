"""Webhooks to a real loopback receiver: signed, retried with back-off, dead after N attempts and replayed by an
administrator, refused on private addresses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text

from app.notifications import delivery
from app.notifications import delivery_repository as deliveries
from app.notifications.delivery import deliver_webhooks
from app.notifications.fanout import fan_out
from app.notifications.webhooks import Outcome, post, webhook_client
from app.services import Services
from app.settings import Settings
from bench.webhook_receiver import Receiver, receiver
from tests.alerts import add_endpoint, add_reader, count
from tests.conftest import GraphQLClient
from tests.newsroom import add_breaking_event, administrator


@pytest.fixture
def hook_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhooks_allow_loopback": True, "notify_backoff_base_seconds": 0.01,
                                       "notify_backoff_cap_seconds": 0.05, "notify_max_attempts": 4})  # fmt: skip


async def _breaking_to(services: Services, settings: Settings, hook: Receiver, path: str = "/hook") -> int:
    reader = await add_reader(services, "app@example.com")
    _, secret = await add_endpoint(services, reader, hook.url + path)
    hook.secrets[path] = secret
    await add_breaking_event(services, 21, ["politics"], ["en"])
    assert (await fan_out(services.engine, settings)).webhooks == 1
    return reader


async def _deliver_until_settled(services: Services, settings: Settings, rounds: int = 200) -> None:
    """Runs the delivery worker until no webhook delivery is waiting for a retry."""
    async with webhook_client(settings) as client:
        for _ in range(rounds):
            await deliver_webhooks(services.engine, client, settings)
            if not await count(services, "SELECT count(*) FROM deliveries WHERE status IN ('pending', 'failed')"):
                return
    raise AssertionError("deliveries never settled")


@pytest.fixture
async def hook() -> AsyncIterator[Receiver]:
    async with receiver() as running:
        yield running


async def test_a_breaking_story_is_posted_signed_once(services: Services, hook_settings: Settings,
                                                      hook: Receiver) -> None:  # fmt: skip
    await _breaking_to(services, hook_settings, hook)
    await _deliver_until_settled(services, hook_settings)
    assert hook.invalid == 0
    assert [(b["type"], b["title"], b["priority"]) for b in hook.received] == [("story.breaking", "Story 21", "urgent")]
    assert await count(services, "SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 1
    await _deliver_until_settled(services, hook_settings)  # delivered is delivered: nothing is sent again
    assert hook.calls == 1


async def test_a_failing_receiver_gets_retries_until_it_answers(services: Services, hook_settings: Settings) -> None:
    async with receiver(failures=2) as failing:
        await _breaking_to(services, hook_settings, failing)
        await _deliver_until_settled(services, hook_settings)
    assert failing.calls == 3
    assert len(failing.received) == 1
    async with services.engine.connect() as connection:
        rows = await deliveries.log_of(connection, [1])
    assert [(r.attempt, r.outcome, r.status_code) for r in rows] == [(1, "failed", 500), (2, "failed", 500),
                                                                     (3, "delivered", 200)]  # fmt: skip


async def test_a_receiver_failing_forever_makes_a_dead_delivery_an_administrator_replays(
    services: Services, hook_settings: Settings, gql: GraphQLClient
) -> None:
    async with receiver(failures=-1) as broken:
        await _breaking_to(services, hook_settings, broken)
        await _deliver_until_settled(services, hook_settings)
        assert broken.calls == hook_settings.notify_max_attempts
        async with services.engine.connect() as connection:
            dead = await deliveries.dead(connection, after=None, limit=10)
        assert [(d.status, d.attempts, d.last_error) for d in dead] == [("dead", 4, "HTTP 500")]
        admin = await administrator(gql, services)
        listed = (await admin.run("DeadDeliveries", first=10))["deadDeliveries"]
        assert [(d["id"], d["attempts"], d["lastError"]) for d in listed] == [(str(dead[0].id), 4, "HTTP 500")]
        assert [(a["attempt"], a["outcome"], a["statusCode"]) for a in listed[0]["log"]] == [
            (1, "failed", 500), (2, "failed", 500), (3, "failed", 500), (4, "dead", 500)]  # fmt: skip
        assert (await admin.run("DeadDeliveries", first=10, afterId=listed[0]["id"]))["deadDeliveries"] == []
        broken.failures = 0  # the receiver is mended
        async with services.engine.begin() as connection:
            assert await deliveries.replay(connection, [dead[0].id, 999]) == [dead[0].id]
        await _deliver_until_settled(services, hook_settings)
    assert len(broken.received) == 1
    assert await count(services, "SELECT count(*) FROM delivery_log WHERE outcome = 'replayed'") == 1


@pytest.mark.parametrize("url", ["http://10.0.0.7/hook", "http://169.254.169.254/latest/meta-data",
                                 "http://[::ffff:192.168.1.1]/hook"])  # fmt: skip
async def test_a_private_address_is_refused_and_dead_at_once(services: Services, hook_settings: Settings,
                                                             url: str) -> None:  # fmt: skip
    reader = await add_reader(services, "ssrf@example.com")
    await add_endpoint(services, reader, url)
    await add_breaking_event(services, 22)
    await fan_out(services.engine, hook_settings)
    await _deliver_until_settled(services, hook_settings)
    async with services.engine.connect() as connection:
        error = await connection.scalar(
            text("SELECT last_error FROM deliveries WHERE status = 'dead' AND attempts = 1")
        )
    assert error is not None
    assert error.startswith("refused:")


async def test_the_worker_jobs_carry_a_breaking_story_to_the_receiver(services: Services, hook_settings: Settings,
                                                                      hook: Receiver) -> None:  # fmt: skip
    from jobs.notifications import deliver_webhooks_job, fan_out_job

    reader = await add_reader(services, "jobs@example.com")
    _, hook.secrets["/hook"] = await add_endpoint(services, reader, hook.url + "/hook")
    await add_breaking_event(services, 23)
    worker = Services.open(hook_settings)
    async with webhook_client(hook_settings) as client:
        ctx = {"services": worker, "webhooks": client}
        try:
            assert await fan_out_job(ctx) == 1
            assert await deliver_webhooks_job(ctx) == 1
        finally:
            await worker.close()
    assert [b["story_id"] for b in hook.received] == [23]


async def _hooked_readers(services: Services, hook: Receiver, odd_url: str) -> None:
    """Two readers on the receiver and, between them, one whose URL was stored without the API's checks."""
    for name, url in (("first", hook.url + "/first"), ("odd", odd_url), ("last", hook.url + "/last")):
        _, secret = await add_endpoint(services, await add_reader(services, f"{name}@example.com"), url)
        hook.secrets[url.removeprefix(hook.url)] = secret
    await add_breaking_event(services, 24)


async def _settled(services: Services) -> list[tuple[str, int, str | None]]:
    async with services.engine.connect() as connection:
        rows = await connection.execute(text("SELECT status, attempts, last_error FROM deliveries ORDER BY id"))
    return [(row.status, row.attempts, row.last_error) for row in rows]


@pytest.mark.parametrize(("url", "error"), [
    ("https://example.com/a\x7fb", "invalid URL: not a usable URL"),
    ("http://" + "a" * 64 + ".example/hook", "invalid URL: 'aaaa"),  # a host label over 63 characters
    ("http://example.com:99999/hook", "invalid URL: not a usable URL"),
])  # fmt: skip
async def test_an_invalid_stored_url_is_dead_at_once_and_the_others_are_delivered_once(
    services: Services, hook_settings: Settings, hook: Receiver, url: str, error: str
) -> None:
    await _hooked_readers(services, hook, url)
    assert (await fan_out(services.engine, hook_settings)).webhooks == 3
    await _deliver_until_settled(services, hook_settings)
    await _deliver_until_settled(services, hook_settings)  # settled is settled: nothing is sent again
    assert (hook.calls, len(hook.received), hook.invalid) == (2, 2, 0)
    first, odd, last = await _settled(services)
    assert (first, last) == (("delivered", 1, None), ("delivered", 1, None))
    assert odd[:2] == ("dead", 1)
    assert str(odd[2]).startswith(error)


async def test_an_unforeseen_error_fails_its_own_delivery_and_never_the_round(
    services: Services, hook_settings: Settings, hook: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd_url = hook.url + "/odd"

    async def post_or_raise(client: Any, url: str, *args: Any) -> Outcome:
        if url == odd_url:
            raise RuntimeError("no handler expects this")
        return await post(client, url, *args)

    monkeypatch.setattr(delivery, "post", post_or_raise)
    await _hooked_readers(services, hook, odd_url)
    await fan_out(services.engine, hook_settings)
    await _deliver_until_settled(services, hook_settings)
    assert (hook.calls, len(hook.received), hook.invalid) == (2, 2, 0)
    first, odd, last = await _settled(services)
    assert (first, last) == (("delivered", 1, None), ("delivered", 1, None))
    assert odd[:2] == ("dead", hook_settings.notify_max_attempts)
    assert str(odd[2]).startswith("unexpected RuntimeError: ")
