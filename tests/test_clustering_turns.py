"""The jobs of one worker share its clustering copy (jobs/worker.py: ctx["clustering"]) and run many at once: one
that fails while it waits for its turn (cancelled by arq's timeout, say) must leave the copy alone for the job whose
turn it is, or that job saves into an empty copy and every later article of the worker starts a story of its own."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from app.services import Services
from app.settings import Settings
from app.stories.service import cluster_articles
from app.stories.store import ClusteringCache
from tests.test_stories_ingest import APPLE, FED, stored


async def test_a_job_cancelled_while_waiting_leaves_the_copy_to_the_job_whose_turn_it_is(
    services: Services, settings: Settings
) -> None:
    cache = ClusteringCache()
    fed = await stored(services, settings, FED)
    placed = await cluster_articles(services.engine, fed, cache)
    fed_story = placed[fed[0]]
    apple = await stored(services, settings, APPLE, start=10)
    async with cache.locked(services.engine) as connection:  # a batch under way: its turn, the lock held
        rows = await cache.batch(connection, apple[:1])
        waiting = asyncio.create_task(cluster_articles(services.engine, apple[1:], cache))
        await asyncio.sleep(0.3)  # the second job is waiting now
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert fed_story in cache.state.stories  # the copy of the batch under way is whole
        assert [row.id for row in rows] == apple[:1]
    # the next batch of the worker finds the story it belongs to: its copy was not emptied
    more = await stored(services, settings, ["Plosser: weather, not the economy, hit the data; Fed taper on track"],
                        start=20)  # fmt: skip
    again = await cluster_articles(services.engine, more, cache)
    assert again[more[0]] == fed_story
    async with services.engine.connect() as connection:
        assert await connection.scalar(text("SELECT count(*) FROM articles WHERE cluster_id = :s"),
                                       {"s": fed_story}) == 4  # fmt: skip
