"""Articles stored at once by stores of different sources: two outlets' feeds often carry the same article URLs (a
wire story, a syndicated piece), and their stores insert them at the same moment."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sqlalchemy import func, select

from app.articles.models import Article
from app.articles.repository import NewArticle, insert_new
from app.services import Services
from app.settings import Settings
from tests.newsroom import add_source

ROUNDS, SHARED = 10, 300


async def test_two_sources_storing_the_same_urls_in_opposite_orders_never_deadlock(
    services: Services, settings: Settings
) -> None:
    """Each URL is stored once, by whichever store comes first; the other skips it. The rows are inserted in one order
    (by URL), so two stores never wait for each other's rows crosswise: in feed order, PostgreSQL found deadlocks
    and aborted one of the stores (its articles lost until the next fetch)."""
    first, second = await add_source(services, settings, "wire-a"), await add_source(services, settings, "wire-b")
    now = datetime.now(UTC)

    def rows(source: int, round_: int, urls: list[str]) -> list[NewArticle]:
        return [NewArticle(source, f"{round_}-{url}", url, f"Story {url}", "", None, now, hash(url)) for url in urls]

    async def store(source: int, round_: int, urls: list[str]) -> int:
        async with services.db.begin() as session:
            return len(await insert_new(session, rows(source, round_, urls)))

    for round_ in range(ROUNDS):
        urls = [f"https://wire.example/{round_}/{n}" for n in range(SHARED)]
        stored = await asyncio.gather(store(first, round_, urls), store(second, round_, urls[::-1]))
        assert sum(stored) == SHARED
    async with services.db() as session:
        assert await session.scalar(select(func.count()).select_from(Article)) == ROUNDS * SHARED
