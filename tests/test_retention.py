"""Retention: each kind of row goes at its age and not before, a bounded batch per transaction; stories that lose
articles stay consistent (counts, representative), emptied ones go, a live story keeps its articles, and the search
index is told. The worker runs it hourly; `newsagg prune --dry-run` counts what is due."""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.archive.models import ArchivedFetch
from app.articles.models import Article
from app.db.migrate import downgrade, upgrade
from app.outbox.models import OutboxEvent
from app.retention import repository
from app.retention.policy import cutoffs
from app.retention.service import count_due, prune
from app.search.sync import SEARCH_TOPIC
from app.services import Services
from app.settings import Settings
from app.sources.models import FetchLog
from app.stories.models import StoryCluster
from app.stories.updates import STORY_UPDATED_TOPIC
from app.stories.velocity import BREAKING_TOPIC
from app.users.models import ReadEvent, User, UserSession
from jobs.retention import retention_job
from jobs.worker import worker_options
from tests.conftest import count_queries, newsagg
from tests.newsroom import StorySpec, add_source, add_story

DAY = timedelta(days=1)


async def _reader(services: Services) -> int:
    async with services.db.begin() as session:
        user = User(email=f"reader{os.urandom(3).hex()}@example.com", password_hash="x")
        session.add(user)
        await session.flush()
        return user.id


async def _articles(services: Services, source_id: int, ages: list[timedelta], now: datetime) -> list[int]:
    """Articles in no story, stored `ages` ago."""
    async with services.db.begin() as session:
        rows = [Article(source_id=source_id, external_id=f"{age}-{n}", url=f"https://old.example/{n}-{age.days}",
                        title=f"Article {n}", summary="", published_at=now - age, crawled_at=now - age,
                        content_hash=n) for n, age in enumerate(ages)]  # fmt: skip
        session.add_all(rows)
        await session.flush()
        return [row.id for row in rows]


async def _count(services: Services, model: type, *where: object) -> int:
    async with services.db() as session:
        return int(await session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


async def test_each_kind_goes_at_its_age_and_not_before(services: Services, settings: Settings) -> None:
    now = datetime.now(UTC)
    source = await add_source(services, settings, "outlet")
    old, kept = await _articles(services, source, [91 * DAY, 89 * DAY], now)
    reader = await _reader(services)
    async with services.db.begin() as session:
        session.add_all(ReadEvent(user_id=reader, article_id=kept, session_id=f"s{days}", action="read",
                                  at=now - days * DAY) for days in (181, 179))  # fmt: skip
        session.add_all([
            UserSession(user_id=reader, token_hash="expired-long-ago", expires_at=now - 8 * DAY),
            UserSession(user_id=reader, token_hash="expired-lately", expires_at=now - 6 * DAY),
            UserSession(user_id=reader, token_hash="signed-out-long-ago", expires_at=now + DAY,
                        revoked_at=now - 8 * DAY),
            UserSession(user_id=reader, token_hash="live", expires_at=now + 20 * DAY),
        ])  # fmt: skip
        fetches = [FetchLog(source_id=source, fetched_at=now - days * DAY, status_code=200, duration_ms=1, bytes=0,
                            items_seen=0, items_new=0) for days in (1, 13, 15, 30, 400)]  # fmt: skip
        session.add_all(fetches)
        await session.flush()
        session.add_all(ArchivedFetch(id=fetch.id, source_id=source, fetched_at=fetch.fetched_at, url="http://a/",
                                      status_code=200, headers={}, raw_bytes=0, body=b"")
                        for fetch in fetches[:2])  # fmt: skip
        session.add_all(OutboxEvent(topic=topic, dedupe_key=key, payload={}, created_at=now - age,
                                    delivered_at=now - age if delivered else None)
                        for key, (topic, age, delivered) in {
                            "update-old": (STORY_UPDATED_TOPIC, 2 * DAY, True),
                            "update-new": (STORY_UPDATED_TOPIC, timedelta(hours=1), True),
                            "update-undelivered": (STORY_UPDATED_TOPIC, 2 * DAY, False),
                            "breaking-recent": (BREAKING_TOPIC, 10 * DAY, True),
                            "breaking-old": (BREAKING_TOPIC, 40 * DAY, True)}.items())  # fmt: skip
    expected = {"articles": 1, "stories": 0, "read_events": 1, "sessions": 2, "fetch_log": 3, "fetch_archive": 1,
                "vocabulary": 0, "outbox": 2, "notifications": 0, "deliveries": 0, "fanouts": 0}  # fmt: skip

    assert await count_due(services.engine, settings, now) == expected
    done = await prune(services.engine, settings, now)

    assert {kind: done.deleted[kind] for kind in expected} == expected
    async with services.db() as session:
        assert list(await session.scalars(select(Article.id))) == [kept]
        assert list(await session.scalars(select(ReadEvent.session_id))) == ["s179"]
        assert set(await session.scalars(select(UserSession.token_hash))) == {"expired-lately", "live"}
        ages = sorted(round((now - at).total_seconds() / 86400) for at in await session.scalars(
            select(FetchLog.fetched_at)))  # fmt: skip
        assert ages == [1, 13]
        assert list(await session.scalars(select(ArchivedFetch.id))) == [fetches[0].id]
        assert set(await session.scalars(select(OutboxEvent.dedupe_key).where(OutboxEvent.dedupe_key.is_not(None)))
                   ) == {"update-new", "update-undelivered", "breaking-recent"}  # fmt: skip
    assert await count_due(services.engine, settings, now) == dict.fromkeys(expected, 0)
    assert old != kept


async def test_zero_keeps_a_kind_forever(services: Services, settings: Settings) -> None:
    now = datetime.now(UTC)
    source = await add_source(services, settings, "outlet")
    await _articles(services, source, [400 * DAY], now)
    forever = settings.model_copy(update={"articles_retention_days": 0, "fetch_log_retention_days": 0})
    due = await count_due(services.engine, forever, now)
    assert (due["articles"], due["fetch_log"], due["read_events"]) == (None, None, 0)
    assert (await prune(services.engine, forever, now)).deleted["articles"] == 0
    assert await _count(services, Article) == 1


def test_a_retention_longer_than_the_calendar_keeps_forever_rather_than_failing_every_pass(settings: Settings) -> None:
    ages = {"articles_retention_days": 1e6, "read_events_retention_days": 1e12, "story_updates_retention_hours": 1e12}
    due = cutoffs(settings.model_copy(update=ages), datetime.now(UTC))
    assert (due.articles, due.read_events, STORY_UPDATED_TOPIC in due.outbox) == (None, None, False)
    assert due.fetch_log is not None  # the others as set
    assert BREAKING_TOPIC in due.outbox


async def test_batches_are_bounded(services: Services, settings: Settings) -> None:
    now = datetime.now(UTC)
    source = await add_source(services, settings, "outlet")
    ids = await _articles(services, source, [100 * DAY] * 10 + [DAY], now)
    reader = await _reader(services)
    async with services.engine.begin() as connection:  # 130 reads of the article kept, all past their retention
        await connection.execute(text("""
            INSERT INTO read_events (user_id, article_id, session_id, action, at)
            SELECT :reader, :article, 's' || k, 'read', now() - interval '200 days' FROM generate_series(1, 130) k
        """), {"reader": reader, "article": ids[-1]})  # fmt: skip
    small = settings.model_copy(update={"retention_article_batch": 3})  # and 60 rows of other kinds

    with count_queries(services) as statements:
        done = await prune(services.engine, small, now)

    article_deletes = [s for s in statements if s.lstrip().startswith("WITH doomed")]
    read_deletes = [s for s in statements if s.lstrip().startswith("DELETE FROM read_events")]
    assert (done.deleted["articles"], done.deleted["read_events"]) == (10, 130)
    assert len(article_deletes) == math.ceil(10 / 3)  # 3+3+3+1: the short batch ends the kind
    assert len(read_deletes) == math.ceil(130 / 60)
    assert done.batches == len(article_deletes) + len(read_deletes)
    assert all("LIMIT" in s for s in article_deletes + read_deletes)


async def test_stories_stay_consistent_and_emptied_ones_go(services: Services, settings: Settings) -> None:
    now = datetime.now(UTC)
    lead, wire, paper = [await add_source(services, settings, name, authority)
                         for name, authority in (("lead", 0.9), ("wire", 0.5), ("paper", 0.3))]  # fmt: skip
    # an old story whose lead article is old but whose others came later; an old story all old; a live story whose
    # articles were stored long ago (its clock is its articles' publication)
    mixed, (mixed_lead, *mixed_rest) = await add_story(services, StorySpec("Mixed", [lead, wire, paper], age=95 * DAY))
    gone, gone_articles = await add_story(services, StorySpec("Gone", [lead, wire], age=100 * DAY))
    live, live_articles = await add_story(services, StorySpec("Live", [lead, wire], age=timedelta(hours=2)))
    async with services.db.begin() as session:
        await session.execute(update(Article).where(Article.id.in_(mixed_rest)).values(crawled_at=now - 10 * DAY))
        await session.execute(update(Article).where(Article.id.in_(live_articles))
                              .values(crawled_at=now - 100 * DAY))  # fmt: skip
        session.add(ReadEvent(user_id=await _reader(services), article_id=mixed_lead, session_id="s", action="read"))
        last_event = await session.scalar(select(func.coalesce(func.max(OutboxEvent.id), 0)))

    done = await prune(services.engine, settings, now)

    assert done.deleted["articles"] == 1 + len(gone_articles)
    assert (done.stories_repaired, done.stories_emptied, done.deleted["stories"]) == ({mixed, gone}, 1, 0)
    async with services.db() as session:
        emptied = await session.get(StoryCluster, gone)
        assert emptied is not None
        assert (emptied.article_count, emptied.representative_article_id) == (0, None)
    assert (await prune(services.engine, settings, now + timedelta(hours=1))).deleted["stories"] == 1  # the next pass
    async with services.db() as session:
        stories = {s.id: s for s in await session.scalars(select(StoryCluster))}
        left = {a.id: a for a in await session.scalars(select(Article))}
        events = list(await session.scalars(select(OutboxEvent).where(OutboxEvent.id > last_event)))
        assert await session.scalar(select(func.count()).select_from(ReadEvent)) == 0
    assert set(stories) == {mixed, live}  # the emptied story is deleted by the next pass
    assert set(left) == {*mixed_rest, *live_articles}
    assert (stories[mixed].article_count, stories[mixed].source_count) == (2, 2)
    assert stories[mixed].representative_article_id == mixed_rest[0]  # the wire's, now the most authoritative
    assert stories[mixed].title == left[mixed_rest[0]].title
    assert (stories[live].article_count, stories[live].representative_article_id) == (2, live_articles[0])
    told = {int(i) for e in events if e.topic == SEARCH_TOPIC for i in e.payload["articles"]
            if not e.payload["inserted"]}  # fmt: skip
    assert told == {mixed_lead, *gone_articles}  # the search index deletes each
    updates = {e.payload["story_id"]: e.payload["article_count"] for e in events if e.topic == STORY_UPDATED_TOPIC}
    assert updates == {mixed: 2, gone: 0}  # storyUpdated subscribers are told


async def test_a_story_merged_into_another_goes_no_later_than_it(services: Services, settings: Settings) -> None:
    """Given a week-old chain, story `first` merged into `second`, merged into the live `last`, with `second` stored
    first, when retention deletes one story, then it is `first`: deleting `second` would cut `first`'s link and leave
    it looking live, with an article count and no articles."""
    now, source = datetime.now(UTC), await add_source(services, settings, "outlet")
    second, _ = await add_story(services, StorySpec("Second", [source], age=9 * DAY), now)
    first, _ = await add_story(services, StorySpec("First", [source], age=10 * DAY), now)
    last, _ = await add_story(services, StorySpec("Last", [source], age=9 * DAY), now)
    async with services.engine.begin() as connection:
        for old, into in ((second, last), (first, second)):  # as the merge pass retires them
            await connection.execute(text("UPDATE story_clusters SET merged_into_id = :into WHERE id = :old"),
                                     {"old": old, "into": into})  # fmt: skip
            await connection.execute(text("UPDATE articles SET cluster_id = :into WHERE cluster_id = :old"),
                                     {"old": old, "into": into})  # fmt: skip
        assert await repository.delete_rows_batch(connection, "stories", before=now - 7 * DAY, batch=1) == 1
    async with services.db() as session:
        left = {s.id: s.merged_into_id for s in await session.scalars(select(StoryCluster))}
    assert left == {second: last, last: None}


async def test_a_short_story_retention_waits_for_stories_to_settle(services: Services, settings: Settings) -> None:
    source = await add_source(services, settings, "outlet")
    recent, _ = await add_story(services, StorySpec("Recent", [source], age=timedelta(hours=30)))
    settled, _ = await add_story(services, StorySpec("Settled", [source], age=timedelta(hours=50)))
    async with services.db.begin() as session:
        await session.execute(update(StoryCluster).values(article_count=0))  # emptied by a source's deletion
    eager = settings.model_copy(update={"stories_retention_days": 1 / 24})
    await prune(services.engine, eager, datetime.now(UTC))
    async with services.db() as session:
        assert set(await session.scalars(select(StoryCluster.id))) == {recent}
    assert settled != recent


async def test_the_job_runs_a_pass(services: Services, settings: Settings) -> None:
    await _articles(services, await add_source(services, settings, "outlet"), [100 * DAY, DAY], datetime.now(UTC))
    assert await retention_job({"services": services}) == 1
    assert await _count(services, Article) == 1


def test_the_worker_runs_retention_hourly(settings: Settings) -> None:
    crons = {job.name: job for job in worker_options(settings)["cron_jobs"]}
    retention = crons["cron:retention_job"]
    assert (retention.minute, retention.second, retention.hour, retention.timeout_s) == (41, 0, None, 3300)
    assert not any("prune" in name for name in crons)  # the fetch log and outbox go with it


async def test_prune_dry_run_counts_what_is_due(services: Services, settings: Settings) -> None:
    now = datetime.now(UTC)
    await _articles(services, await add_source(services, settings, "outlet"), [120 * DAY, 120 * DAY, DAY], now)
    env = {**os.environ, "DATABASE_URL": str(settings.database_url), "NEWSAGG_FETCH_LOG_RETENTION_DAYS": "0"}

    dry = newsagg("prune", "--dry-run", env=env, check=True).stdout
    assert "articles     2 due" in dry
    assert "fetch_log    kept forever" in dry
    assert await _count(services, Article) == 3
    done = newsagg("prune", env=env, check=True).stdout
    assert "articles     2 deleted" in done
    assert await _count(services, Article) == 1


async def test_a_dry_run_leaves_the_schema_as_it_found_it(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine, "0014")  # a release behind: its operator looks before upgrading
    url = scratch_engine.url.render_as_string(hide_password=False)
    dry = newsagg("prune", "--dry-run", env={**os.environ, "DATABASE_URL": url}, check=True).stdout
    assert "articles     0 due" in dry
    async with scratch_engine.connect() as connection:
        assert await connection.scalar(text("SELECT version_num FROM alembic_version")) == "0014"


RETENTION_INDEXES = {"ix_articles_crawled_at", "ix_story_clusters_retired", "ix_read_events_at",
                     "ix_user_sessions_expires_at", "ix_user_sessions_revoked_at"}  # fmt: skip


async def _indexes(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as connection:
        return set(await connection.scalars(text("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")))


async def test_the_retention_migration_goes_down_and_up(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine)
    assert await _indexes(scratch_engine) >= RETENTION_INDEXES
    async with scratch_engine.connect() as connection:
        partial = await connection.scalar(text("SELECT indexdef FROM pg_indexes WHERE indexname = :name"),
                                          {"name": "ix_user_sessions_revoked_at"})  # fmt: skip
    assert "WHERE (revoked_at IS NOT NULL)" in partial
    await downgrade(scratch_engine, "0014")
    assert not RETENTION_INDEXES & await _indexes(scratch_engine)
    await upgrade(scratch_engine)
    assert await _indexes(scratch_engine) >= RETENTION_INDEXES
