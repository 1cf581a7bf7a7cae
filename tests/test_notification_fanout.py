"""Fan-out: breaking stories and followed stories' updates become notifications and deliveries for the readers whose
rules match, once, within their cap per hour, deferred by their quiet hours in their own time zone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import text

from app.notifications.fanout import fan_out
from app.services import Services
from app.settings import Settings
from jobs.notifications import expire_alert_hours_job
from jobs.worker import worker_options
from tests.alerts import add_breaking_events, add_endpoint, add_reader, add_readers, count
from tests.newsroom import add_breaking_event


async def test_a_breaking_story_reaches_the_readers_whose_rules_match_once(services: Services,
                                                                           settings: Settings) -> None:  # fmt: skip
    everything = await add_reader(services, "all@example.com")
    politics = await add_reader(services, "politics@example.com", topics=["politics"])
    french = await add_reader(services, "fr@example.com", languages=["fr"])
    off = await add_reader(services, "off@example.com", breaking=False)
    await add_endpoint(services, everything, "http://127.0.0.1:9/hook")
    await add_breaking_event(services, 5, ["politics"], ["en"])
    report = await fan_out(services.engine, settings)
    assert (report.notified, report.webhooks) == (2, 1)
    notified = await count(services, "SELECT count(*) FROM notifications WHERE user_id = ANY(:ids)",
                           ids=[everything, politics])  # fmt: skip
    assert notified == 2
    assert await count(services, "SELECT count(*) FROM notifications WHERE user_id = ANY(:ids)", ids=[french, off]) == 0
    # when the fan-out is run again from the start (a worker died before recording its progress)
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE notification_fanouts SET status = 'pending', after_user_id = 0"))
    again = await fan_out(services.engine, settings)
    # then nothing is written twice, and the cap counted each reader once
    assert (again.notified, again.webhooks) == (0, 0)
    assert await count(services, "SELECT count(*) FROM notifications") == 2
    assert await count(services, "SELECT count(*) FROM deliveries") == 1
    assert await count(services, "SELECT sum(sent) FROM alert_hours") == 2


async def test_a_flood_of_events_stays_within_each_readers_cap(services: Services, settings: Settings) -> None:
    await add_readers(services, 20, cap_per_hour=5)
    reader = await add_reader(services, "hooked@example.com", cap_per_hour=3)
    await add_endpoint(services, reader, "http://127.0.0.1:9/hook")
    await add_breaking_events(services, 10_000)
    while (await fan_out(services.engine, settings)).batches:
        pass
    assert await count(services, "SELECT count(*) FROM notification_fanouts WHERE status <> 'done'") == 0
    # then no reader got more than their cap in any hour (a run that crosses the hour counts the next one afresh)
    assert await count(services, "SELECT max(sent) FROM alert_hours WHERE user_id <> :u", u=reader) == 5
    assert await count(services, "SELECT max(sent) FROM alert_hours WHERE user_id = :u", u=reader) == 3
    hours = await count(services, "SELECT count(DISTINCT hour) FROM alert_hours")
    assert hours in (1, 2)
    per_reader = await count(services, "SELECT max(c) FROM (SELECT count(*) AS c FROM notifications "
                                       "GROUP BY user_id) n")  # fmt: skip
    assert 5 <= per_reader <= 5 * hours
    assert await count(services, "SELECT count(*) FROM notifications") == await count(
        services, "SELECT sum(sent) FROM alert_hours"
    )  # each notification counted once, none beyond a cap
    webhooks = await count(services, "SELECT count(*) FROM deliveries WHERE channel = 'webhook'")
    assert webhooks == await count(services, "SELECT count(*) FROM notifications WHERE user_id = :u", u=reader)
    assert 3 <= webhooks <= 3 * hours


async def test_quiet_hours_defer_webhooks_to_their_end_in_the_readers_zone(services: Services,
                                                                           settings: Settings) -> None:  # fmt: skip
    zone = ZoneInfo("Pacific/Auckland")
    local = datetime.now(zone)
    minute = local.hour * 60 + local.minute
    quiet = await add_reader(services, "quiet@example.com", time_zone="Pacific/Auckland",
                             quiet_start=(minute - 60) % 1440, quiet_end=(minute + 90) % 1440)  # fmt: skip
    awake = await add_reader(services, "awake@example.com", time_zone="America/New_York",
                             quiet_start=(minute + 120) % 1440, quiet_end=(minute + 180) % 1440)  # fmt: skip
    for reader in (quiet, awake):
        await add_endpoint(services, reader, "http://127.0.0.1:9/hook")
    await add_breaking_event(services, 8)
    await fan_out(services.engine, settings)
    async with services.engine.connect() as connection:
        due = dict((await connection.execute(text("SELECT user_id, next_attempt_at FROM deliveries"))).all())
    end = (local.replace(second=0, microsecond=0) + timedelta(minutes=90)).astimezone(UTC)
    assert abs(due[quiet] - end) < timedelta(seconds=61)  # the end of quiet hours, Auckland time
    assert due[awake] <= datetime.now(UTC)  # New York is not in its quiet hours (those are Auckland's times)
    assert await count(services, "SELECT count(*) FROM notifications") == 2  # in-app is written at once


async def test_a_followed_story_update_notifies_its_followers_normally(services: Services,
                                                                      settings: Settings) -> None:  # fmt: skip
    from tests.newsroom import StorySpec, add_source, add_story

    outlets = [await add_source(services, settings, f"outlet{i}") for i in range(2)]
    story_id, _ = await add_story(services, StorySpec("Bridge closes for repairs", outlets))
    follower = await add_reader(services, "follower@example.com", breaking=False)
    await add_reader(services, "other@example.com")
    async with services.engine.begin() as connection:
        await connection.execute(text("INSERT INTO story_follows (user_id, story_id) VALUES (:u, :s)"),
                                 {"u": follower, "s": story_id})  # fmt: skip
        payload = {"story_id": story_id, "article_count": 3, "source_count": 2, "revision": 1,
                   "last_updated_at": datetime.now(UTC).isoformat()}  # fmt: skip
        await connection.execute(text("INSERT INTO outbox (topic, dedupe_key, payload) VALUES ('story.updated', 'k', "
                                      "CAST(:p AS jsonb))"), {"p": json.dumps(payload)})  # fmt: skip
    await fan_out(services.engine, settings)
    async with services.engine.connect() as connection:
        rows = (await connection.execute(text("SELECT user_id, kind, priority, title FROM notifications"))).all()
    assert [tuple(r) for r in rows] == [(follower, "story_update", "normal", "Bridge closes for repairs")]


async def test_old_notifications_and_deliveries_go_and_dead_ones_stay(services: Services, settings: Settings) -> None:
    from app.retention.service import prune

    reader = await add_reader(services, "old@example.com")
    await add_endpoint(services, reader, "http://127.0.0.1:9/hook")
    for story in (51, 52):
        await add_breaking_event(services, story)
    await fan_out(services.engine, settings)
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE notifications SET created_at = now() - interval '31 days'"))
        await connection.execute(text("UPDATE deliveries SET created_at = now() - interval '31 days'"))
        await connection.execute(text("UPDATE deliveries SET status = 'dead' WHERE event_id = (SELECT min(event_id) "
                                      "FROM deliveries)"))  # fmt: skip
    done = await prune(services.engine, settings.model_copy(update={"retention_article_batch": 1}), datetime.now(UTC))
    assert (done.deleted["notifications"], done.deleted["deliveries"]) == (2, 1)
    assert await count(services, "SELECT count(*) FROM notifications") == 0
    assert await count(services, "SELECT count(*) FROM deliveries WHERE status = 'dead'") == 1


async def test_an_event_whose_fan_out_keeps_failing_is_retried_then_dead(services: Services,
                                                                        settings: Settings) -> None:  # fmt: skip
    quick = settings.model_copy(update={"notify_backoff_base_seconds": 0.01, "notify_backoff_cap_seconds": 0.02,
                                        "notify_max_attempts": 3})  # fmt: skip
    await add_reader(services, "poisoned@example.com")
    async with services.engine.begin() as connection:  # a breaking event that names no story
        await connection.execute(text("INSERT INTO outbox (topic, dedupe_key, payload) "
                                      "VALUES ('story.breaking', 'story.breaking:none', '{}')"))  # fmt: skip
    dead: list[int] = []
    for _ in range(500):
        dead += (await fan_out(services.engine, quick)).dead
        if dead:
            break
    async with services.engine.connect() as connection:
        row = (await connection.execute(text("SELECT event_id, status, attempts, last_error "
                                             "FROM notification_fanouts"))).one()  # fmt: skip
    assert (dead, row.status, row.attempts) == ([row.event_id], "dead", 3)
    assert row.last_error.startswith("KeyError")
    assert (await fan_out(services.engine, quick)).dead == []  # dead is dead: not taken again


async def test_old_hourly_counts_go_on_their_own_schedule_not_with_each_fan_out(
    services: Services, settings: Settings
) -> None:
    await add_readers(services, 3)
    async with services.engine.begin() as connection:  # counts of this hour, the last one and the one before
        await connection.execute(text("INSERT INTO alert_hours (user_id, hour, sent) SELECT u.id, "
                                      "date_trunc('hour', now()) - h * interval '1 hour', 1 FROM users u, "
                                      "generate_series(0, 2) h"))  # fmt: skip
    await add_breaking_event(services, 1)
    await fan_out(services.engine, settings)
    assert await count(services, "SELECT count(*) FROM alert_hours") == 9  # the fan-out deletes nothing
    assert await expire_alert_hours_job({"services": services}) == 3  # the hour before the last goes
    assert await count(services, "SELECT count(DISTINCT hour) FROM alert_hours") == 2
    crons = {job.name: job for job in worker_options(settings)["cron_jobs"]}
    assert crons["cron:expire_alert_hours_job"].minute == set(range(0, 60, 5))
