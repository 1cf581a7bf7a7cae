"""Every query of share links: the signing key, links by reader and target, a code's destination, daily clicks."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from sqlalchemy import select, text, update
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


async def add_days(session: AsyncSession, counts: Sequence[DayCount]) -> None:
    if not counts:
        return
    rows = [{"link_id": c.link_id, "day": c.day, "referrer_host": c.referrer_host, "clicks": c.clicks,
             "previews": c.previews} for c in counts]  # fmt: skip
    statement = insert(ShareLinkDay).values(rows)
    excluded = statement.excluded
    await session.execute(statement.on_conflict_do_update(
        index_elements=[ShareLinkDay.link_id, ShareLinkDay.day, ShareLinkDay.referrer_host],
        set_={"clicks": ShareLinkDay.clicks + excluded.clicks, "previews": ShareLinkDay.previews + excluded.previews},
    ))  # fmt: skip
    # links deleted since their clicks were counted: the insert above skips nothing, the foreign key would refuse


async def existing_links(session: AsyncSession, link_ids: Sequence[int]) -> set[int]:
    return set(await session.scalars(select(ShareLink.id).where(ShareLink.id.in_(link_ids))))


async def add_clicks(session: AsyncSession, clicks: Mapping[int, int]) -> dict[int, int]:
    """Adds clicks to each article (id -> clicks); the story each of those articles is in now (id -> story id)."""
    stories: dict[int, int] = {}
    for article_id, count in sorted(clicks.items()):  # a fixed order: concurrent writers never deadlock
        added = update(Article).where(Article.id == article_id).values(click_count=Article.click_count + count)
        story = await session.scalar(added.returning(Article.cluster_id))
        if story is not None:
            stories[article_id] = story
    return stories


async def forget_batches(session: AsyncSession, older_than_days: int) -> None:
    await session.execute(text("DELETE FROM share_click_batches WHERE flushed_at < now() - make_interval(days => :d)"),
                          {"d": older_than_days})  # fmt: skip


async def days_of(session: AsyncSession, link_id: int, since: date) -> list[ShareLinkDay]:
    rows = await session.scalars(select(ShareLinkDay).where(ShareLinkDay.link_id == link_id, ShareLinkDay.day >= since)
                                 .order_by(ShareLinkDay.day, ShareLinkDay.referrer_host))  # fmt: skip
    return list(rows)
