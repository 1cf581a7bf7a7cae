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


async def test_jobs_in_flight_cluster_each_article_once_taking_along_what_waits(services: Services,
                                                                               settings: Settings) -> None:  # fmt: skip
    """Twenty jobs at once on one worker's copy, the first ones taking along (`pending`) the articles of later ones:
    every article ends in one story, counted once."""
    cache = ClusteringCache()
    titles = [f"{word} {n}" for n in range(20) for word in (FED[n % 3], APPLE[n % 3])]
    ids = await stored(services, settings, titles)
    async with services.engine.begin() as connection:  # understood: waiting, a batch before theirs may take them
        await connection.execute(text("UPDATE articles SET simhash = 1 WHERE id = ANY(:ids)"), {"ids": ids})
    jobs = [cluster_articles(services.engine, ids[k : k + 2], cache, pending=7) for k in range(0, len(ids), 2)]
    placed: dict[int, int] = {}
    results = await asyncio.gather(*jobs)
    assert max(map(len, results)) > 2  # a batch took along later jobs' articles
    for result in results:
        assert not placed.keys() & result.keys()  # no article placed by two jobs
        placed |= result
    assert placed.keys() == set(ids)
    async with services.engine.connect() as connection:
        counts = dict((await connection.execute(text(
            "SELECT s.id, s.article_count FROM story_clusters s WHERE s.merged_into_id IS NULL AND s.article_count > 0"
        ))).all())  # fmt: skip
        stored_in = dict(
            (
                await connection.execute(
                    text("SELECT cluster_id, count(*) FROM articles WHERE id = ANY(:ids) GROUP BY cluster_id"),
                    {"ids": ids},
                )
            ).all()
        )
    assert counts == stored_in  # each story counts its articles once
    fed = {placed[i] for i, title in zip(ids, titles, strict=True) if "Plosser" in title}
    apple = {placed[i] for i, title in zip(ids, titles, strict=True) if "Apple" in title}
    assert len(fed) == len(apple) == 1
    assert fed != apple
