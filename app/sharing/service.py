"""Sharing rules: one link per reader and target (sharing again returns it), only what has a public http(s) URL,
and a new link counts as a share of the article it leads to. Services never commit: the caller does."""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from app.sharing import codes
from app.sharing import repository as links
from app.sharing.keys import SigningKey
from app.sharing.models import ShareLink, ShareTargetKind
from app.stories.models import StoryCluster

MAX_DAYS = 366  # `ShareLink.clicks(days:)` beyond it is BAD_USER_INPUT: a full page of links is 100 x 366 days


class ShareErrorCode(enum.StrEnum):
    NOT_FOUND = "NOT_FOUND"  # no such article or story
    NOT_SHAREABLE = "NOT_SHAREABLE"  # it has no web address to lead to


class ShareRejected(Exception):
    def __init__(self, code: ShareErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Shared:
    link: ShareLink
    created: bool  # False: the reader had shared this already, and gets the same link
    story_id: int | None  # the story the shared article belongs to (trending counts the share)


async def share(session: AsyncSession, creator_id: int, kind: ShareTargetKind, target_id: int,
                admit: Callable[[], Awaitable[None]], key: SigningKey) -> Shared:  # fmt: skip
    """The reader's link to the target, made if need be: `admit` is awaited first (it raises to refuse a new link;
    sharing again what was shared already is not refused)."""
    existing = await links.link_of(session, creator_id, kind, target_id)
    story_id, lead = await _target(session, kind, target_id)
    if existing is not None:
        return Shared(existing, False, story_id)
    await admit()
    link = await links.insert_link(session, codes.mint(await key.read()), creator_id, kind, target_id)
    if link is None:  # the same reader, concurrently: theirs stands
        existing = await links.link_of(session, creator_id, kind, target_id)
        assert existing is not None
        return Shared(existing, False, story_id)
    await links.add_share(session, lead)
    return Shared(link, True, story_id)


async def _target(session: AsyncSession, kind: ShareTargetKind, target_id: int) -> tuple[int | None, int]:
    """The target's story and the article its link leads to; ShareRejected when it cannot be shared."""
    if kind is ShareTargetKind.STORY:
        story = await session.get(StoryCluster, target_id)
        if story is None or story.representative_article_id is None:
            raise ShareRejected(ShareErrorCode.NOT_FOUND, "no such story")
        if story.merged_into_id is not None:
            raise ShareRejected(ShareErrorCode.NOT_FOUND, "this story joined another: share that one")
        article_id = story.representative_article_id
    else:
        article_id = target_id
    found = await links.article_url(session, article_id)
    if found is None:
        raise ShareRejected(ShareErrorCode.NOT_FOUND, f"no such {kind.value}")
    url, story_id = found
    if not url or not url.startswith(("https://", "http://")):
        raise ShareRejected(ShareErrorCode.NOT_SHAREABLE, f"this {kind.value} has no web address to lead to")
    return (target_id if kind is ShareTargetKind.STORY else story_id), article_id


async def own_link(session: AsyncSession, creator_id: int, code: str) -> ShareLink | None:
    """The link with this code if `creator_id` made it (anyone else: None, as for a code that does not exist)."""
    if not codes.well_formed(code):
        return None
    link = await links.link_by_code(session, code)
    return link if link is not None and link.creator_id == creator_id else None


@dataclass(frozen=True, slots=True)
class DayClicks:
    day: date
    clicks: int
    previews: int


@dataclass(frozen=True, slots=True)
class LinkClicks:
    by_day: list[DayClicks]  # every day of the span, oldest first (zeros too)
    by_referrer: list[tuple[str, int]]  # (host, clicks), most clicks first

    @property
    def total(self) -> int:
        return sum(d.clicks for d in self.by_day)

    @property
    def previews(self) -> int:
        return sum(d.previews for d in self.by_day)


async def clicks_of_links(session: AsyncSession, link_ids: Sequence[int], days: int,
                          today: date) -> dict[int, LinkClicks]:  # fmt: skip
    """Each link's counts of the last `days` days (1 to MAX_DAYS, today included), by day and referrer host."""
    assert 1 <= days <= MAX_DAYS, days
    calendar = [today - timedelta(days=back) for back in reversed(range(days))]
    per_day: dict[int, dict[date, DayClicks]] = defaultdict(dict)
    per_host: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for row in await links.clicks_of(session, link_ids, calendar[0]):
        if row.host is None:
            per_day[row.link_id][row.day] = DayClicks(row.day, row.clicks, row.previews)
        elif row.clicks:
            per_host[row.link_id].append((row.host, row.clicks))
    return {link: LinkClicks([per_day[link].get(d) or DayClicks(d, 0, 0) for d in calendar],
                             sorted(per_host[link], key=lambda h: (-h[1], h[0]))) for link in link_ids}  # fmt: skip


async def links_page(session: AsyncSession, creator_id: int, after: tuple[datetime, int] | None,
                     size: int) -> list[ShareLink]:  # fmt: skip
    """Up to `size` + 1 of the reader's links, newest first, after the key of an earlier page's last one (the extra
    one only says there is a next page)."""
    return await links.links_of(session, creator_id, after, size + 1)
