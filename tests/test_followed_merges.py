"""Followed stories that merge: the follow moves to the surviving story (one follow per reader) and the follower is
told once, at normal priority, by the surviving story's update."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from app.articles.repository import NewArticle, insert_new
from app.notifications import rules
from app.notifications.fanout import fan_out
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.stories.store import ClusteringCache
from tests.alerts import add_reader
from tests.newsroom import two_stories_of_one_event

FED = "Fed's Plosser says weak data caused by weather, taper on track"


async def _articles(services: Services, settings: Settings, count: int) -> list[int]:
    ids, now = [], datetime.now(UTC)
    async with services.db.begin() as session:
        for k in range(count):
            source = await create_source(session, settings, SourceRequest(
                feed_url=f"http://127.0.0.1:9/outlet{k}", name=f"Outlet {k}"), existing_ok=True)  # fmt: skip
            key = f"{zlib.crc32(FED.encode())}-{k}"
            at = now + timedelta(seconds=k)
            new = NewArticle(source.id, key, f"https://o{k}.example/{key}", FED, "", None, at, k)
            ids += [a.id for a in await insert_new(session, [new])]
    return ids


async def _merge(services: Services, olds: list[int], survivor: int) -> None:
    """The merge pass joins each of `olds` to `survivor`, in one save."""
    now = datetime.now(UTC)
    async with services.engine.begin() as connection:
        cache = ClusteringCache()
        state = await cache.catch_up(connection, since=now - timedelta(hours=1))
        for old in olds:
            state.merge(state.stories[old], state.stories[survivor])
        await cache.save(connection, now)


async def _follows(services: Services) -> set[tuple[int, int]]:
    async with services.engine.connect() as connection:
        return {(r.user_id, r.story_id) for r in await connection.execute(text("SELECT * FROM story_follows"))}


async def _notifications(services: Services) -> list[tuple[int, int, str, str]]:
    async with services.engine.connect() as connection:
        rows = await connection.execute(text("SELECT user_id, story_id, kind, priority FROM notifications "
                                             "ORDER BY user_id"))  # fmt: skip
        return [tuple(r) for r in rows]  # type: ignore[misc]


async def test_followers_of_merged_stories_follow_the_survivor_and_are_told_once(
    services: Services, settings: Settings
) -> None:
    # given three stories of one event and readers following them in every combination
    ids = await _articles(services, settings, 3)
    first, second, survivor = await two_stories_of_one_event(services, ids, [FED] * 3)
    alice = await add_reader(services, "alice@example.com", breaking=False)
    bob = await add_reader(services, "bob@example.com", breaking=False)
    carol = await add_reader(services, "carol@example.com", breaking=False)
    dave = await add_reader(services, "dave@example.com", breaking=False)
    quiet = await add_reader(services, "quiet@example.com", breaking=False, story_updates=False)
    wanted = {alice: [first], bob: [first, survivor], carol: [first, second], dave: [survivor], quiet: [second]}
    async with services.db.begin() as session:
        for reader, stories in wanted.items():
            for story in stories:
                await rules.follow_story(session, reader, story, follow=True)
    assert (await fan_out(services.engine, settings)).notified == 0  # nothing happened to them yet
    # when the merge pass joins the first two to the third
    await _merge(services, [first, second], survivor)
    report = await fan_out(services.engine, settings)
    # then every follow is on the survivor, one per reader
    assert await _follows(services) == {(reader, survivor) for reader in wanted}
    # and each follower who wants story updates is told once, at normal priority, of the surviving story
    expected = [(reader, survivor, "story_update", "normal") for reader in (alice, bob, carol, dave)]
    assert await _notifications(services) == expected
    assert report.notified == 4
    async with services.engine.connect() as connection:
        payload = await connection.scalar(text("SELECT payload FROM outbox WHERE payload->>'story_id' = :s "
                                                "AND topic = 'story.updated'"), {"s": str(survivor)})  # fmt: skip
    assert payload["merged_from"] == sorted([first, second])
    # when the fan-out runs again from the start (a worker died before recording its progress), nobody is told twice
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE notification_fanouts SET status = 'pending', after_user_id = 0"))
    assert (await fan_out(services.engine, settings)).notified == 0
    assert len(await _notifications(services)) == 4


async def test_unfollowing_after_a_merge_stops_the_alerts(services: Services, settings: Settings) -> None:
    old, survivor = await two_stories_of_one_event(services, await _articles(services, settings, 2), [FED] * 2)
    reader = await add_reader(services, "reader@example.com", breaking=False)
    async with services.db.begin() as session:
        await rules.follow_story(session, reader, old, follow=True)
    await _merge(services, [old], survivor)
    async with services.db.begin() as session:
        assert await rules.followed_story_ids(session, reader) == [survivor]
        await rules.follow_story(session, reader, survivor, follow=False)
    await fan_out(services.engine, settings)
    assert await _follows(services) == set()
    assert await _notifications(services) == []
