"""The clustering vocabulary: terms as long as PostgreSQL stores them, counted alike in memory and in the table, and
rare terms unseen for long forgotten by retention."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select, update
from sqlalchemy import text as text_

from app.articles.models import Article
from app.articles.repository import NewArticle, insert_new
from app.retention.service import count_due, prune
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.stories.clustering import article_terms
from app.stories.models import StoryVocabulary
from app.stories.service import cluster_articles
from app.stories.state import TERM_LENGTH
from app.stories.store import TOTAL, ClusteringCache
from jobs.stories import CLUSTER_PENDING
from tests.test_refresh_outage import until_waiting
from tests.test_stories_ingest import FED, stored

# Two words (a German compound and its plural-like twin) alike in their first 64 characters and more
COMPOUND = "Donaudampfschifffahrtselektrizitaetenhauptbetriebswerkbauunterbeamtengesellschaft"
HEADLINE = f"{COMPOUND}A and {COMPOUND}B sign the Danube shipping accord"


async def _vocabulary(services: Services) -> dict[str, int]:
    async with services.db() as session:
        rows = await session.execute(select(StoryVocabulary.term, StoryVocabulary.documents))
        return {term: int(documents) for term, documents in rows}


def test_terms_are_cut_where_they_are_made_and_the_cut_ones_add_up() -> None:
    """Given a headline with two words sharing their first 64 characters, when its terms are made, then they are one
    term of 64 characters weighing what both did."""
    whole = article_terms(HEADLINE.replace(COMPOUND, "Shortword"), "", "en")
    cut = article_terms(HEADLINE, "", "en")
    assert max(map(len, cut)) == TERM_LENGTH
    [long_term] = [t for t in cut if len(t) == TERM_LENGTH]
    assert cut[long_term] == whole["shortworda"] + whole["shortwordb"]
    assert {t: w for t, w in cut.items() if t != long_term} == {
        t: w for t, w in whole.items() if not t.startswith("shortword")}  # fmt: skip


async def test_another_worker_reads_the_counts_this_one_holds(services: Services, settings: Settings) -> None:
    """Given a worker that clustered an article with long words and wrote its counts, when a new worker reads the
    vocabulary, then it counts every term of the article as the first one does (the table's keys are the memory's)."""
    [article_id] = await stored(services, settings, [FED[0]])
    async with services.db.begin() as session:
        await session.execute(update(Article).where(Article.id == article_id).values(title=HEADLINE))
    writer, reader = ClusteringCache(), ClusteringCache()
    await cluster_articles(services.engine, [article_id], writer, flush_vocabulary=True)
    async with reader.locked(services.engine) as connection:
        state = await reader.catch_up(connection, since=datetime.now(UTC) - timedelta(hours=1))
    terms = article_terms(HEADLINE, "", None)
    assert {t: state.frequencies[t] for t in terms} == {t: writer.state.frequencies[t] for t in terms} == dict.fromkeys(
        terms, 1)  # fmt: skip
    assert state.documents == writer.state.documents == 1


async def test_terms_cut_alike_add_their_counts_when_written(services: Services) -> None:
    """Given a worker that counted two long terms alike in their first 64 characters (terms not made by
    article_terms), when it writes its counts, then the stored term counts both."""
    cache = ClusteringCache()
    async with cache.locked(services.engine) as connection:
        cache.state.observe([COMPOUND + "A", COMPOUND + "B", "accord"])
        cache.state.observe([COMPOUND + "A"])
        await cache.save(connection, datetime.now(UTC), flush_vocabulary=True)
    assert await _vocabulary(services) == {COMPOUND[:TERM_LENGTH]: 3, "accord": 1, TOTAL: 2}


async def test_rare_terms_unseen_for_long_are_forgotten(services: Services, settings: Settings) -> None:
    """Given terms seen in 1, 2 and 3 articles, long ago or lately, and the row counting the articles, when retention
    runs, then only the rare ones (at most 2 articles) unseen for 90 days go; common terms and the count stay."""
    now = datetime.now(UTC)
    rows = {"typo": (1, 91), "oneoffname": (2, 400), "lately": (2, 89), "common": (3, 400), TOTAL: (1, 400)}
    async with services.db.begin() as session:
        await session.execute(insert(StoryVocabulary), [
            {"term": t, "documents": n, "revision": 1, "seen_at": now - timedelta(days=days)}
            for t, (n, days) in rows.items()])  # fmt: skip
    assert (await count_due(services.engine, settings, now))["vocabulary"] == 2
    done = await prune(services.engine, settings, now)
    assert done.deleted["vocabulary"] == 2
    assert await _vocabulary(services) == {"lately": 2, "common": 3, TOTAL: 1}
    forever = settings.model_copy(update={"vocabulary_retention_days": 0})
    assert (await count_due(services.engine, forever, now + timedelta(days=999)))["vocabulary"] is None
    later = await prune(services.engine, settings, now + timedelta(days=90))
    assert later.deleted["vocabulary"] == 1  # "lately", now unseen for 91 days


async def test_a_failed_clustering_transaction_takes_back_its_own_counts_and_keeps_the_earlier_unwritten_ones(
    services: Services,
) -> None:
    """A worker writes its vocabulary counts every VOCABULARY_FLUSH_ARTICLES articles. A transaction that fails (here
    the batch raises; PostgreSQL gone does the same) takes back the words its own articles added, which are clustered
    and counted again, and keeps those of the batches before it, whose articles are in stories already."""
    cache = ClusteringCache()
    async with cache.locked(services.engine):
        cache.state.observe(["alpha", "beta"])  # an earlier batch, committed, its counts not written yet

    async def failing_batch() -> None:
        async with cache.locked(services.engine):
            cache.state.observe(["beta", "gamma"])
            raise RuntimeError("the batch failed")

    with pytest.raises(RuntimeError):
        await failing_batch()
    assert (cache.state.observed, cache.state.articles_observed) == (Counter({"alpha": 1, "beta": 1}), 1)
    assert cache.state.frequencies == Counter({"alpha": 1, "beta": 1})


async def test_a_cancelled_batch_of_the_largest_size_and_longest_texts_takes_back_exactly_its_words(
    services: Services, settings: Settings
) -> None:
    """A batch as large as a job takes (CLUSTER_PENDING articles), each at the longest title and summary ingest keeps,
    every word of them new (some 300,000 terms): cancelled while it waits to place its articles (arq's job timeout),
    it leaves the worker's earlier unwritten counts as they were; run again, it counts each word once."""
    rng = random.Random(19)
    cache = ClusteringCache()
    earlier = await stored(services, settings, FED)
    await cluster_articles(services.engine, earlier, cache)

    def text(limit: int) -> str:
        words = []
        while sum(map(len, words)) + len(words) < limit - 9:
            words.append("".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(8)))
        return " ".join(words)

    async with services.db.begin() as session:
        source = await create_source(session, settings, SourceRequest(feed_url="http://127.0.0.1:9/words", name="W"))
        rows = [NewArticle(source.id, f"w{k}", f"https://w.example/{k}", text(settings.title_max_chars),
                           text(settings.summary_max_chars), None, datetime.now(UTC), k)
                for k in range(CLUSTER_PENDING)]  # fmt: skip
        ids = [a.id for a in await insert_new(session, rows)]
    async with services.engine.connect() as holder:  # one of its articles locked: the batch waits to place them
        await holder.execute(text_("SELECT id FROM articles WHERE id = :id FOR UPDATE"), {"id": ids[-1]})
        job = asyncio.create_task(cluster_articles(services.engine, ids, cache))
        await until_waiting(services.engine, 1)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        await holder.rollback()
    assert cache.state.articles_observed == len(FED)
    assert sum(cache.state.observed.values()) == sum(len(article_terms(t, "", None)) for t in FED)

    placed = await cluster_articles(services.engine, ids, cache, flush_vocabulary=True)
    assert set(placed) == set(ids)
    async with services.db() as session:
        counts = dict((await session.execute(select(StoryVocabulary.term, StoryVocabulary.documents))).all())
    assert counts[TOTAL] == len(FED) + CLUSTER_PENDING
    assert all(counts[term] == 1 for term in article_terms(rows[0].title, rows[0].summary, None))
