"""Every query of share links: the signing key, links by reader and target, a code's destination, daily clicks."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import Row, func, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.articles.models import Article
from app.sharing.models import ShareClickBatch, ShareLink, ShareLinkDay, ShareLinkKey, ShareTargetKind


@dataclass(frozen=True, slots=True)
class Destination:
    link_id: int
    article_id: int | None  # the article the link leads to now (None: a story page, or gone)
    story_id: int | None  # the story it belongs to now
    url: str | None  # None: the target was deleted


async def signing_key(session: AsyncSession, candidate: bytes) -> bytes:
    """The key, `candidate` becoming it when there is none yet (concurrent first uses agree on one)."""
    await session.execute(insert(ShareLinkKey).values(id=1, key=candidate).on_conflict_do_nothing())
    key = await session.scalar(select(ShareLinkKey.key).where(ShareLinkKey.id == 1))
    assert key is not None  # inserted above, or by a concurrent first use
    return key


async def link_of(session: AsyncSession, creator_id: int, kind: ShareTargetKind, target_id: int) -> ShareLink | None:
    column = ShareLink.article_id if kind is ShareTargetKind.ARTICLE else ShareLink.story_id
    found: ShareLink | None = await session.scalar(
        select(ShareLink).where(ShareLink.creator_id == creator_id, column == target_id, ~ShareLink.from_merge)
    )
    return found


async def insert_link(session: AsyncSession, code: str, creator_id: int, kind: ShareTargetKind,
                      target_id: int) -> ShareLink | None:  # fmt: skip
    """The new link, or None when the reader's link to this target was made meanwhile."""
    column = "article_id" if kind is ShareTargetKind.ARTICLE else "story_id"
    statement = (insert(ShareLink).values(code=code, creator_id=creator_id, target_kind=kind, **{column: target_id})
                 .on_conflict_do_nothing().returning(ShareLink.id))  # fmt: skip
    link_id = await session.scalar(statement)
    return None if link_id is None else await session.get(ShareLink, link_id)


async def link_by_code(session: AsyncSession, code: str) -> ShareLink | None:
    found: ShareLink | None = await session.scalar(select(ShareLink).where(ShareLink.code == code))
    return found


async def article_url(session: AsyncSession, article_id: int) -> tuple[str | None, int | None] | None:
    """(url, story id) of an article; None when there is no such article."""
    row = (await session.execute(select(Article.url, Article.cluster_id).where(Article.id == article_id))).first()
    return None if row is None else (row.url, row.cluster_id)


# A story's destination is its representative article; a story merged into another leads to the survivor's.
_DESTINATION = text("""
    SELECT l.id AS link_id, l.target_kind::text AS kind, a.id AS article_id, a.url AS article_url,
           a.cluster_id AS article_story, coalesce(m.id, s.id) AS story_id, r.id AS lead_id, r.url AS lead_url
      FROM share_links l
      LEFT JOIN articles a ON a.id = l.article_id
      LEFT JOIN story_clusters s ON s.id = l.story_id
      LEFT JOIN story_clusters m ON m.id = s.merged_into_id
      LEFT JOIN articles r ON r.id = coalesce(m.representative_article_id, s.representative_article_id)
     WHERE l.code = :code
""")


async def destination(session: AsyncSession, code: str, story_page: str | None) -> Destination | None:
    """Where `code` leads (None: no such link). `story_page`: a story link's page, `{story_id}` in it."""
    row = (await session.execute(_DESTINATION, {"code": code})).first()
    if row is None:
        return None
    if row.kind == ShareTargetKind.ARTICLE:
        return Destination(row.link_id, row.article_id, row.article_story, row.article_url)
    if row.story_id is None:
        return Destination(row.link_id, None, None, None)
    if story_page:
        return Destination(row.link_id, None, row.story_id, story_page.replace("{story_id}", str(row.story_id)))
    return Destination(row.link_id, row.lead_id, row.story_id, row.lead_url)


async def add_share(session: AsyncSession, article_id: int) -> None:
    await session.execute(update(Article).where(Article.id == article_id)
                          .values(share_count=Article.share_count + 1))  # fmt: skip


async def claim_batch(session: AsyncSession, batch_id: uuid.UUID) -> bool:
    """False when this batch was written already."""
    claimed = await session.scalar(
        insert(ShareClickBatch).values(id=batch_id).on_conflict_do_nothing().returning(ShareClickBatch.id)
    )
    return claimed is not None


@dataclass(frozen=True, slots=True)
class DayCount:
    link_id: int
    day: date
    referrer_host: str
    clicks: int
    previews: int


# A batch is one statement per table, its rows passed as arrays. Rows of links deleted since their clicks were
# counted are skipped (the foreign key would refuse them); the links kept are held (KEY SHARE) until the commit.
_ADD_DAYS = text("""
    INSERT INTO share_link_days AS d (link_id, day, referrer_host, clicks, previews)
    SELECT b.link_id, b.day, b.host, b.clicks, b.previews
      FROM unnest(CAST(:links AS bigint[]), CAST(:days AS date[]), CAST(:hosts AS text[]), CAST(:clicks AS int[]),
                  CAST(:previews AS int[])) AS b(link_id, day, host, clicks, previews)
      JOIN (SELECT id FROM share_links WHERE id = ANY(CAST(:links AS bigint[])) FOR KEY SHARE) l ON l.id = b.link_id
    ON CONFLICT (link_id, day, referrer_host)
    DO UPDATE SET clicks = d.clicks + excluded.clicks, previews = d.previews + excluded.previews
""")


async def add_days(session: AsyncSession, counts: Sequence[DayCount]) -> int:
    """How many rows were written (those of deleted links are not)."""
    if not counts:
        return 0
    written = await session.execute(_ADD_DAYS, {"links": [c.link_id for c in counts], "days": [c.day for c in counts],
                                          "hosts": [c.referrer_host for c in counts],
                                          "clicks": [c.clicks for c in counts],
                                          "previews": [c.previews for c in counts]})  # fmt: skip
    return int(written.rowcount)  # type: ignore[attr-defined]


# The articles are locked in id order first: concurrent writers of click_count (a URL merge) never deadlock with it.
_ADD_CLICKS = text("""
    WITH batch AS (SELECT * FROM unnest(CAST(:ids AS bigint[]), CAST(:clicks AS int[])) AS b(id, clicks)),
         locked AS (SELECT a.id FROM articles a JOIN batch USING (id) ORDER BY a.id FOR UPDATE OF a)
    UPDATE articles a SET click_count = a.click_count + b.clicks
      FROM batch b JOIN locked USING (id)
     WHERE a.id = b.id
    RETURNING a.id, a.cluster_id
""")


async def add_clicks(session: AsyncSession, clicks: Mapping[int, int]) -> dict[int, int]:
    """Adds clicks to each article (id -> clicks); the story each of those articles is in now (id -> story id)."""
    if not clicks:
        return {}
    rows = await session.execute(_ADD_CLICKS, {"ids": list(clicks), "clicks": list(clicks.values())})
    return {row.id: row.cluster_id for row in rows if row.cluster_id is not None}


async def forget_batches(session: AsyncSession, older_than_days: int) -> None:
    await session.execute(text("DELETE FROM share_click_batches WHERE flushed_at < now() - make_interval(days => :d)"),
                          {"d": older_than_days})  # fmt: skip


# A span of days of many links in one statement: a row per link and day (host NULL), and a row per link and referrer
# host (day NULL): at most 366 rows a link and its hosts, however many rows of (day, host) it has.
_CLICKS_OF = text("""
    SELECT link_id, CASE WHEN grouping(day) = 0 THEN day END AS day,
           CASE WHEN grouping(referrer_host) = 0 THEN referrer_host END AS host,
           sum(clicks)::bigint AS clicks, sum(previews)::bigint AS previews
      FROM share_link_days
     WHERE link_id = ANY(CAST(:ids AS bigint[])) AND day >= :since
     GROUP BY GROUPING SETS ((link_id, day), (link_id, referrer_host))
""")


async def clicks_of(session: AsyncSession, link_ids: Sequence[int], since: date) -> list[Row[Any]]:
    """(link_id, day, host, clicks, previews) since `since`: per day (host None) and per referrer (day None)."""
    return list(await session.execute(_CLICKS_OF, {"ids": list(link_ids), "since": since}))


# Concurrent workers take disjoint batches; rows queued by transactions not yet committed wait for the next run.
_TAKE_EVICTIONS = text("""
    DELETE FROM share_link_evictions
     WHERE id IN (SELECT id FROM share_link_evictions ORDER BY id LIMIT :n FOR UPDATE SKIP LOCKED)
    RETURNING code
""")


async def take_evictions(session: AsyncSession, limit: int) -> list[str]:
    """Up to `limit` queued codes, removed from the queue when the transaction commits (duplicates possible)."""
    return list(await session.scalars(_TAKE_EVICTIONS, {"n": limit}))


async def links_of(session: AsyncSession, creator_id: int, before: tuple[datetime, int] | None,
                   limit: int) -> list[ShareLink]:  # fmt: skip
    """A reader's links, newest first, those after the `before` key (created_at, id) of an earlier page."""
    query = select(ShareLink).where(ShareLink.creator_id == creator_id)
    if before is not None:
        query = query.where(tuple_(ShareLink.created_at, ShareLink.id) < tuple_(*before))
    return list(await session.scalars(query.order_by(ShareLink.created_at.desc(), ShareLink.id.desc()).limit(limit)))


async def total_clicks(session: AsyncSession, link_ids: Sequence[int]) -> dict[int, int]:
    """Every click each link has had (flushed ones: the last flush interval's are still in Redis); absent: none."""
    rows = await session.execute(select(ShareLinkDay.link_id, func.sum(ShareLinkDay.clicks))
                                 .where(ShareLinkDay.link_id.in_(link_ids)).group_by(ShareLinkDay.link_id))  # fmt: skip
    return {link_id: int(total) for link_id, total in rows}
