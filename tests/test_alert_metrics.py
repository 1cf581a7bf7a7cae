"""Readers' alerts in /metrics and in retention's dry run: notifications written, webhook deliveries by outcome, dead
deliveries and the fan-out's lag (sampled with the other backlogs), and the alert rows `newsagg prune --dry-run`
counts."""

from __future__ import annotations

import os

from prometheus_client import REGISTRY
from sqlalchemy import text

from app.notifications.delivery import deliver_webhooks
from app.notifications.fanout import TOPICS, fan_out
from app.notifications.webhooks import webhook_client
from app.observability.backlogs import sample_backlogs
from app.services import Services
from app.settings import Settings
from bench.webhook_receiver import receiver
from tests.alerts import add_endpoint, add_reader, count
from tests.conftest import newsagg
from tests.newsroom import add_breaking_event


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def _sample(services: Services) -> tuple[float, float]:
    """(dead deliveries, fan-out lag in seconds) as the worker's backlog job samples them."""
    await sample_backlogs(services.engine, (), "search", alert_topics=TOPICS, alert_lookback_seconds=3600)
    return _metric("newsagg_alert_deliveries_dead"), _metric("newsagg_alert_fanout_lag_seconds")


async def test_alerts_are_counted_from_fan_out_to_dead_delivery(services: Services, settings: Settings) -> None:
    hooks = settings.model_copy(update={"webhooks_allow_loopback": True, "notify_backoff_base_seconds": 0.01,
                                        "notify_backoff_cap_seconds": 0.02, "notify_max_attempts": 2})  # fmt: skip
    written = _metric("newsagg_notifications_written_total", kind="breaking")
    delivered = _metric("newsagg_alert_deliveries_total", channel="webhook", outcome="delivered")
    failed = _metric("newsagg_alert_deliveries_total", channel="webhook", outcome="failed")
    dead = _metric("newsagg_alert_deliveries_total", channel="webhook", outcome="dead")
    async with receiver() as good, receiver(failures=-1) as broken:
        for n, hook in enumerate((good, broken)):
            reader = await add_reader(services, f"app{n}@example.com")
            _, hook.secrets["/hook"] = await add_endpoint(services, reader, hook.url + "/hook")
        await add_reader(services, "inapp@example.com")
        # given a story that broke two minutes ago and has not been fanned out yet
        await add_breaking_event(services, 7)
        async with services.engine.begin() as connection:
            await connection.execute(text("UPDATE outbox SET created_at = now() - interval '120 seconds'"))
        assert (await _sample(services))[1] >= 120
        # when it is fanned out and delivered (one receiver answers, the other fails until the delivery is dead)
        await fan_out(services.engine, hooks)
        async with webhook_client(hooks) as client:
            while await count(services, "SELECT count(*) FROM deliveries WHERE status IN ('pending', 'failed')"):
                await deliver_webhooks(services.engine, client, hooks)
    # then each step is counted
    assert _metric("newsagg_notifications_written_total", kind="breaking") - written == 3
    assert _metric("newsagg_alert_deliveries_total", channel="webhook", outcome="delivered") - delivered == 1
    assert _metric("newsagg_alert_deliveries_total", channel="webhook", outcome="failed") - failed == 1
    assert _metric("newsagg_alert_deliveries_total", channel="webhook", outcome="dead") - dead == 1
    assert await _sample(services) == (1, 0)  # one dead delivery waits; nothing waits for the fan-out


async def test_prune_dry_run_counts_the_alert_rows_retention_would_delete(services: Services,
                                                                         settings: Settings) -> None:  # fmt: skip
    await add_reader(services, "reader@example.com")
    await add_breaking_event(services, 8)
    await fan_out(services.engine, settings)
    async with services.engine.begin() as connection:  # a notification, a finished fan-out: both 40 days old
        await connection.execute(text("UPDATE notifications SET created_at = now() - interval '40 days'"))
        await connection.execute(text("UPDATE notification_fanouts SET created_at = now() - interval '40 days'"))
    env = {**os.environ, "DATABASE_URL": str(settings.database_url), "NEWSAGG_NOTIFY_RETENTION_DAYS": "30"}
    dry = newsagg("prune", "--dry-run", env=env, check=True).stdout
    assert "notifications 1 due" in dry
    assert "fanouts      1 due" in dry
    assert "deliveries   0 due" in dry
    assert await count(services, "SELECT count(*) FROM notifications") == 1  # counted, not deleted
    kept = newsagg("prune", "--dry-run", env=env | {"NEWSAGG_NOTIFY_RETENTION_DAYS": "0"}, check=True).stdout
    assert "notifications kept forever" in kept
    done = newsagg("prune", env=env, check=True).stdout
    assert "notifications 1 deleted" in done
    assert await count(services, "SELECT count(*) FROM notifications") == 0
