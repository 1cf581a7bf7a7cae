"""Every query on sources, their crawl schedule and the fetch log."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Update, case, exists, func, insert, select, text, true, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import Executor
from app.places.outlets import Outlet, OutletKind
from app.sources.models import Circuit, ClaimStatus, CrawlSchedule, FetchLog, Source, SourceStatus
from app.workers.models import Worker


@dataclass(frozen=True, slots=True)
class NewSource:
    feed_url: str
    name: str
    site_url: str | None
    category: str | None
    language: str | None
    authority: float
    min_interval_s: int
    max_interval_s: int
    admin_fields: list[str] = field(default_factory=list)  # chosen by an administrator: the feed may not rename
    country: str | None = None
    outlet_kind: str = "unknown"
    outlet_inferred: bool = True


async def insert_source(session: AsyncSession, new: NewSource) -> Source | None:
    """Insert a source and its schedule row (due now); None when the feed URL is already known."""
    source_id = await session.scalar(
        pg_insert(Source)
        .values(**asdict(new))
        .on_conflict_do_nothing(index_elements=[Source.feed_url])
        .returning(Source.id)
    )
    if source_id is None:
        return None
    await session.execute(insert(CrawlSchedule).values(source_id=source_id))
    return await session.get(Source, source_id)


async def source_by_feed_url(session: AsyncSession, feed_url: str) -> Source | None:
    return await session.scalar(select(Source).where(Source.feed_url == feed_url))


async def sources_by_ids(session: AsyncSession, ids: Sequence[int]) -> list[Source]:
    return list(await session.scalars(select(Source).where(Source.id.in_(ids))))


async def schedules_by_source_ids(session: AsyncSession, ids: Sequence[int]) -> list[CrawlSchedule]:
    return list(await session.scalars(select(CrawlSchedule).where(CrawlSchedule.source_id.in_(ids))))


async def list_sources(
    session: AsyncSession, *, limit: int, after_id: int | None, status: SourceStatus | None
) -> list[Source]:
    """Sources in id order, keyset-paginated."""
    query = select(Source).order_by(Source.id).limit(limit)
    if after_id is not None:
        query = query.where(Source.id > after_id)
    if status is not None:
        query = query.where(Source.status == status)
    return list(await session.scalars(query))


def effective_priority(now: datetime, half_life_s: float) -> ColumnElement[float]:
    """A source's crawl priority as of `now`: app/ingest/priority.py's `decayed`, in SQL."""
    elapsed = func.greatest(func.extract("epoch", now - CrawlSchedule.priority_at), 0)
    return func.coalesce(CrawlSchedule.priority * func.power(0.5, elapsed / half_life_s), 0)


async def claim_due(
    session: Executor,
    *,
    now: datetime,
    limit: int,
    claimed_by: str | None = None,
    half_life_s: float = 1800,
    head_start_s: float = 600,
) -> list[int]:
    """Mark up to `limit` due, pending, active sources in flight (claims named by `now`, held by the worker
    `claimed_by`); concurrent claimers skip each other's rows. The longest overdue go first, a source's crawl priority
    (decayed with `half_life_s`) counting as a head start: `head_start_s` at priority 100, in proportion below and
    above. A head start, not a pass: a source overdue by more than that is still claimed before a fresh raised one,
    so no source starves however many are raised."""
    head_start = func.make_interval(0, 0, 0, 0, 0, 0, effective_priority(now, half_life_s) * (head_start_s / 100))
    due = (
        select(CrawlSchedule.source_id)
        .join(Source, Source.id == CrawlSchedule.source_id)
        .where(
            CrawlSchedule.status == ClaimStatus.PENDING,
            CrawlSchedule.next_crawl_at <= now,
            Source.status == SourceStatus.ACTIVE,
        )
        .order_by(CrawlSchedule.next_crawl_at - head_start)
        .limit(limit)
        .with_for_update(of=CrawlSchedule, skip_locked=True)
        .scalar_subquery()
    )
    claimed = await session.scalars(
        update(CrawlSchedule)
        .where(CrawlSchedule.source_id.in_(due))
        .values(
            status=ClaimStatus.IN_FLIGHT,
            last_triggered_at=now,
            claimed_by=claimed_by,
            # the attempt after an open circuit's back-off is its half-open probe
            circuit=case((CrawlSchedule.circuit == Circuit.OPEN, Circuit.HALF_OPEN), else_=CrawlSchedule.circuit),
        )
        .returning(CrawlSchedule.source_id)
    )
    return sorted(claimed)


async def raise_priority(
    session: Executor,
    source_ids: Collection[int],
    *,
    priority: int,
    now: datetime,
    half_life_s: float,
    push_window: timedelta | None = None,
) -> int:
    """The sources' crawl priority becomes at least `priority` as of `now`, and each becomes due as soon as its
    minimum interval since its last fetch allows (never sooner than now, never later than it already was). A
    failing source keeps its back-off. With `push_window` (a hub's push), a source a push raised less than that long
    ago is left as it is. Returns how many sources were raised."""
    if not source_ids:
        return 0
    pushed: dict[str, Any] = {}
    window: ColumnElement[bool] = true()
    if push_window is not None:
        pushed = {"websub_raised_at": now}
        window = CrawlSchedule.websub_raised_at.is_(None) | (CrawlSchedule.websub_raised_at <= now - push_window)
    earliest = func.greatest(
        now, func.coalesce(CrawlSchedule.last_fetched_at, now) + Source.min_interval_s * timedelta(seconds=1)
    )
    healthy = (CrawlSchedule.consecutive_failures == 0) & (CrawlSchedule.throttle_streak == 0)
    raised = await session.execute(
        update(CrawlSchedule)
        .where(CrawlSchedule.source_id == Source.id, Source.id.in_(sorted(source_ids)), window)
        .values(
            priority=func.least(func.round(func.greatest(effective_priority(now, half_life_s), priority)), 32767),
            priority_at=now,
            **pushed,
            next_crawl_at=case(
                (healthy, func.least(CrawlSchedule.next_crawl_at, earliest)), else_=CrawlSchedule.next_crawl_at
            ),
        )
        .returning(CrawlSchedule.source_id)
    )
    return len(raised.all())


async def claim_one(session: AsyncSession, source_id: int, *, now: datetime) -> bool:
    """Claim one source now, due or not; False when it is already in flight."""
    claimed = await session.scalar(
        update(CrawlSchedule)
        .where(CrawlSchedule.source_id == source_id, CrawlSchedule.status == ClaimStatus.PENDING)
        .values(status=ClaimStatus.IN_FLIGHT, last_triggered_at=now, claimed_by=None)  # held by no worker until run
        .returning(CrawlSchedule.source_id)
    )
    return claimed is not None


async def reactivate(session: AsyncSession, source_id: int) -> None:
    """A paused or dead source gets a fresh start: active, no strikes, circuit closed."""
    await session.execute(update(Source).where(Source.id == source_id).values(status=SourceStatus.ACTIVE))
    await session.execute(
        update(CrawlSchedule)
        .where(CrawlSchedule.source_id == source_id)
        .values(consecutive_failures=0, gone_streak=0, gone_since=None, throttle_streak=0, circuit=Circuit.CLOSED)
    )


@dataclass(frozen=True, slots=True)
class ReleasedClaims:
    worker_gone: int  # the worker holding them stopped beating
    stale: int  # older than the in-flight timeout, whatever their worker


async def release_abandoned_claims(
    session: AsyncSession, *, now: datetime, older_than: timedelta, silent_for: timedelta
) -> ReleasedClaims:
    """In-flight claims whose job will never end return to pending, due at once: those held by a worker whose
    heartbeat is older than `silent_for` (judged by the database's clock, as heartbeats are written), and any claim
    older than `older_than`."""
    alive = select(Worker.id).where(
        Worker.id == CrawlSchedule.claimed_by, Worker.heartbeat_at >= func.now() - silent_for
    )
    stale = CrawlSchedule.last_triggered_at < now - older_than
    released = await session.scalars(
        update(CrawlSchedule)
        .where(
            CrawlSchedule.status == ClaimStatus.IN_FLIGHT,
            stale | (CrawlSchedule.claimed_by.is_not(None) & ~exists(alive)),
        )
        .values(**_given_up(due=now))
        .returning(stale)
    )
    reasons = list(released)
    return ReleasedClaims(worker_gone=reasons.count(False), stale=reasons.count(True))


async def in_flight_claims(db: Executor, *, claimed_before: datetime) -> list[tuple[int, datetime]]:
    """(source id, claim time) of every claim in flight since before `claimed_before`."""
    rows = await db.execute(
        select(CrawlSchedule.source_id, CrawlSchedule.last_triggered_at).where(
            CrawlSchedule.status == ClaimStatus.IN_FLIGHT, CrawlSchedule.last_triggered_at < claimed_before
        )
    )
    return [(row.source_id, row.last_triggered_at) for row in rows]


async def release_claims(db: Executor, claims: Sequence[tuple[int, datetime]], *, now: datetime) -> int:
    """These claims (each still the one made at its time) return to pending, due at once."""
    if not claims:
        return 0
    released = await db.scalars(
        update(CrawlSchedule)
        .where(
            CrawlSchedule.status == ClaimStatus.IN_FLIGHT,
            tuple_(CrawlSchedule.source_id, CrawlSchedule.last_triggered_at).in_(list(claims)),
        )
        .values(**_given_up(due=now))
        .returning(CrawlSchedule.source_id)
    )
    return len(list(released))


async def postpone_claim(db: Executor, source_id: int, *, claimed_at: datetime | None, until: datetime) -> bool:
    """The claim made at `claimed_at` (any, without it) returns to pending, due at `until`; False when it is no
    longer in flight."""
    query = _named_claim(source_id, claimed_at).values(**_given_up(due=until))
    return await db.scalar(query.returning(CrawlSchedule.source_id)) is not None


async def adopt_claim(db: Executor, source_id: int, *, worker_id: str, claimed_at: datetime | None) -> bool:
    """The worker about to run a claim's job holds it from now on. False when that claim (the one made at
    `claimed_at`; any, without it) is no longer in flight: released since, and perhaps claimed again."""
    query = _named_claim(source_id, claimed_at).values(claimed_by=worker_id)
    return await db.scalar(query.returning(CrawlSchedule.source_id)) is not None


def _named_claim(source_id: int, claimed_at: datetime | None) -> Update:
    """The source's claim in flight: the one made at `claimed_at`, or any without it."""
    query = update(CrawlSchedule).where(
        CrawlSchedule.source_id == source_id, CrawlSchedule.status == ClaimStatus.IN_FLIGHT
    )
    if claimed_at is not None:
        query = query.where(CrawlSchedule.last_triggered_at == claimed_at)
    return query


def _given_up(*, due: datetime) -> dict[str, Any]:
    """A claim given up: back to pending, held by no worker, due at `due`."""
    return {"status": ClaimStatus.PENDING, "claimed_by": None, "next_crawl_at": due}


REFRESH_COLUMNS = (
    Source.id, Source.feed_url, Source.etag, Source.last_modified, Source.status, Source.min_interval_s,
    Source.max_interval_s, Source.websub_state, Source.websub_hub, Source.websub_lease_expires_at,
    Source.websub_updated_at, Source.name, Source.site_url, Source.admin_fields, Source.article_text,
    CrawlSchedule.articles_per_hour,
    CrawlSchedule.hourly_histogram,
    CrawlSchedule.last_fetched_at, CrawlSchedule.consecutive_failures, CrawlSchedule.gone_streak,
    CrawlSchedule.gone_since, CrawlSchedule.last_triggered_at,
    CrawlSchedule.throttle_streak, CrawlSchedule.circuit, CrawlSchedule.redirect_url, CrawlSchedule.redirect_streak,
)  # fmt: skip


async def refresh_row(db: Executor, source_id: int, *, lock: bool = False) -> Any:
    """What a refresh needs of a source and its schedule, in one query. Read before a fetch, no lock is taken (the
    caller owns the source through its in-flight claim); read again to store a fetch's or a push's outcome, `lock`
    holds the source row, then the schedule row, until commit, so that of two outcomes stored at once the second builds
    on the first. The source row first, as every transaction that takes both does (an administrator's change, a
    merge, a removal)."""
    query = select(*REFRESH_COLUMNS).join(CrawlSchedule, CrawlSchedule.source_id == Source.id)
    if lock:  # not FOR UPDATE: other transactions' foreign keys to the source (its follows, a fetch log) do not wait
        query = query.with_for_update(of=[Source, CrawlSchedule], key_share=True)
    return (await db.execute(query.where(Source.id == source_id))).first()


async def record_fetch(
    session: Executor,
    source_id: int,
    *,
    schedule: dict[str, object],
    fetch_log: dict[str, object],
    source_changes: dict[str, object],
) -> int:
    """The bookkeeping of one fetch in one statement: the schedule row (its claim released; a push changes only its
    counters, and a push that did not parse none), the fetch log row (its id returned), the source row when it
    changed. The transaction then commits without waiting for the WAL flush: ingest writes are replayable (a crash
    loses at most the last moment of it, and the next fetch stores it again)."""
    durability = select(func.set_config("synchronous_commit", "off", True).label("setting")).cte("durability")
    schedule_row = update(CrawlSchedule).where(CrawlSchedule.source_id == source_id).values(**schedule)
    fetch_log_row = (
        insert(FetchLog).values(source_id=source_id, **fetch_log).returning(FetchLog.id).cte("fetch_log_row")
    )
    ctes = [schedule_row.cte("schedule_row")] if schedule else []
    ctes.append(fetch_log_row)
    if source_changes:
        ctes.append(update(Source).where(Source.id == source_id).values(**source_changes).cte("source_row"))
    query = select(fetch_log_row.c.id).select_from(durability.join(fetch_log_row, true())).add_cte(*ctes)
    return int((await session.execute(query)).scalar_one())


async def save_schedule(session: Executor, source_id: int, **values: object) -> None:
    await session.execute(update(CrawlSchedule).where(CrawlSchedule.source_id == source_id).values(**values))


async def update_source(session: Executor, source_id: int, **values: object) -> None:
    await session.execute(update(Source).where(Source.id == source_id).values(**values))


async def source_by_websub_token(db: Executor, token: str) -> Any:
    return (await db.execute(select(Source.__table__).where(Source.websub_token == token))).first()


async def feed_url_taken(session: Executor, feed_url: str) -> bool:
    return await session.scalar(select(Source.id).where(Source.feed_url == feed_url)) is not None


async def add_fetch_log(session: Executor, **values: object) -> None:
    await session.execute(insert(FetchLog).values(**values))


_PLACE_INFERRED = text("""
    UPDATE sources SET country = coalesce(:country, country),
                       outlet_kind = CASE WHEN :kind = 'unknown' THEN outlet_kind ELSE :kind END
    WHERE id = :id AND outlet_inferred
""")


async def place_inferred_outlet(db: Executor, source_id: int, outlet: Outlet) -> None:
    """What the source's addresses now say of an outlet nobody placed (what they do not say is left as it was)."""
    if outlet.country is not None or outlet.kind is not OutletKind.UNKNOWN:
        await db.execute(_PLACE_INFERRED, {"id": source_id, "country": outlet.country, "kind": outlet.kind.value})


# --- two sources merged into one (app/sources/merge.py), in the caller's transaction -------------------------------
_LOCK_SOURCES = text("SELECT id FROM sources WHERE id = ANY(CAST(:ids AS bigint[])) ORDER BY id FOR UPDATE")
_PLAN_MERGES = text("""
    INSERT INTO url_merges (copy, keeper)
    SELECT o.id, k.id FROM articles o JOIN articles k ON k.source_id = :survivor AND k.external_id = o.external_id
    WHERE o.source_id = :other
""")
_MOVE_ARTICLES = text("UPDATE articles SET source_id = :survivor WHERE source_id = :other RETURNING cluster_id")
_MOVE = [text(statement) for statement in (
    "UPDATE fetch_log SET source_id = :survivor WHERE source_id = :other",
    "UPDATE fetch_archive SET source_id = :survivor WHERE source_id = :other",
    """INSERT INTO source_follows (user_id, source_id, created_at)
       SELECT user_id, :survivor, created_at FROM source_follows WHERE source_id = :other ON CONFLICT DO NOTHING""",
    """INSERT INTO source_mutes (user_id, source_id, created_at)
       SELECT user_id, :survivor, created_at FROM source_mutes WHERE source_id = :other ON CONFLICT DO NOTHING""",
    # the survivor is crawled as soon as either was due, at the higher of their priorities
    """UPDATE crawl_schedule s SET next_crawl_at = least(s.next_crawl_at, o.next_crawl_at),
                                   priority = greatest(s.priority, o.priority)
       FROM crawl_schedule o WHERE s.source_id = :survivor AND o.source_id = :other""",
    "DELETE FROM sources WHERE id = :other",
)]  # fmt: skip
_ARRIVALS = text("""
    UPDATE story_clusters sc SET recent_arrivals = (
        SELECT coalesce(jsonb_agg(CASE WHEN e ->> 1 = CAST(:other_key AS text)
                                       THEN jsonb_build_array(e -> 0, CAST(:survivor_key AS text)) ELSE e END), '[]')
        FROM jsonb_array_elements(sc.recent_arrivals) AS e)
    WHERE sc.id = ANY(CAST(:stories AS bigint[]))
""")
_HOLDER = text("SELECT id FROM sources WHERE feed_url = :url")
_REWRITE = text("UPDATE sources SET feed_url = :url WHERE id = :id")


async def lock_sources(db: Executor, source_ids: Sequence[int]) -> set[int]:
    """These sources locked for update, in id order; those that exist."""
    return set(await db.scalars(_LOCK_SOURCES, {"ids": list(source_ids)}))


async def plan_shared_article_merges(db: Executor, survivor: int, other: int) -> None:
    """Into url_merges: each article of `other` that `survivor` holds too (the same external id), to be merged."""
    await db.execute(_PLAN_MERGES, {"survivor": survivor, "other": other})


async def move_articles(db: Executor, survivor: int, other: int) -> list[int | None]:
    """The other's articles are the survivor's: the stories they are in (None for none)."""
    return list(await db.scalars(_MOVE_ARTICLES, {"survivor": survivor, "other": other}))


async def hand_over_arrivals(db: Executor, survivor: int, other: int, stories: Sequence[int]) -> None:
    """The stories' recent arrivals from `other` are the survivor's."""
    await db.execute(_ARRIVALS, {"other_key": str(other), "survivor_key": str(survivor), "stories": list(stories)})


async def hand_over_and_delete(db: Executor, survivor: int, other: int) -> None:
    """The other's fetch log, archive, follows, mutes and schedule go to the survivor; the other is deleted."""
    for statement in _MOVE:
        await db.execute(statement, {"survivor": survivor, "other": other})


async def holder_of_feed_url(db: Executor, url: str) -> int | None:
    holder: int | None = await db.scalar(_HOLDER, {"url": url})
    return holder


async def set_feed_url(db: Executor, source_id: int, url: str) -> None:
    await db.execute(_REWRITE, {"id": source_id, "url": url})
