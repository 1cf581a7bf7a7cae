"""The clustering state on PostgreSQL, and each worker's copy of it.

PostgreSQL holds the truth: stories (centroid and its norm, sources, representative, labels, recent arrivals) and
the vocabulary's document frequencies. A worker keeps the active part in memory (`ClusteringCache`): the clusterer
runs on it, and what changed is written back in a few set-based statements. Every write stamps the rows with a
number from one sequence (`revision`), so before each batch a worker reads only what other workers changed since its
last batch.

Callers work inside `ClusteringCache.locked`, a transaction holding the clustering lock: clustering is serialized
across workers, so two articles of one story ingested at once still end in one story, revisions are handed out in
commit order, and a worker's copy is exact once it has caught up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.engine import begin_with
from app.stories.models import StoryCluster
from app.stories.state import TERM_LENGTH, Representative, Story, StoryState, story_topics
from app.stories.updates import STORY_UPDATED_TOPIC, update_events
from app.stories.velocity import BREAKING_TOPIC, WINDOW, breaking_events, measure

TOTAL = ""  # the vocabulary row that counts articles
PRUNE_EVERY = timedelta(minutes=1)  # how often a worker's copy drops stories that left the window
# A worker writes its vocabulary counts after this many articles (and at each merge pass): other workers' IDF lags
# by at most that much, and a worker that stops loses at most that many articles' counts. Both are harmless.
VOCABULARY_FLUSH_ARTICLES = 2000
# Held by every writer of stories for the length of its transaction (app/stories/repair.py takes it too).
CLUSTERING_LOCK = text("SELECT pg_advisory_xact_lock(hashtext('newsagg:clustering'))")


_CHANGED_STORIES = text("""
    SELECT s.id, s.centroid, s.centroid_norm, s.article_count, s.source_ids, s.first_seen_at, s.last_updated_at,
           s.merged_into_id, s.revision, s.representative_article_id, s.title, s.topic_counts, s.languages,
           s.recent_arrivals, s.velocity, s.is_breaking, s.breaking_started_at,
           coalesce(src.authority, 0) AS authority, coalesce(a.published_at, s.first_seen_at) AS published_at
    FROM story_clusters AS s
    LEFT JOIN articles AS a ON a.id = s.representative_article_id
    LEFT JOIN sources AS src ON src.id = a.source_id
    WHERE s.revision > :revision AND (s.last_updated_at >= :since OR s.merged_into_id IS NOT NULL
                                      OR s.article_count = 0)
    ORDER BY s.revision
""")
# Story ids and the save's revision, reserved under the lock (revisions follow commit order): `count` ids.
_RESERVED = """reserved AS MATERIALIZED (
    SELECT nextval('story_revision_seq') AS revision,
           ARRAY(SELECT nextval('story_clusters_id_seq') FROM generate_series(1, {count})) AS new_ids)"""
_RESERVE = text(f"WITH {_RESERVED.format(count=':n')} SELECT revision, new_ids FROM reserved")
# A batch read with its reservation, in one round trip: the articles asked for and up to :pending more that are
# understood and waiting (the ids go by primary key: ORed with a subquery, it was a scan of all articles); an id for
# each. Those already in a story are dropped by the caller: asked for `cluster_id IS NULL`, the planner walks the
# unclustered articles' index, which holds an entry for every article clustered since the last vacuum (35-50 ms a
# batch against 1 ms, bench/cluster.py). The reservation row comes even when no article does.
_BATCH = text(f"""
    WITH wanted AS MATERIALIZED (
        SELECT CAST(:ids AS bigint[]) || ARRAY(SELECT id FROM articles WHERE cluster_id IS NULL
                                                   AND simhash IS NOT NULL ORDER BY id LIMIT :pending) AS ids),
    {_RESERVED.format(count="(SELECT cardinality(ids) FROM wanted)")}
    SELECT r.revision, r.new_ids, a.id, a.title, a.summary, a.source_id, a.published_at, src.authority, a.topics,
           a.language, a.crawled_at, a.cluster_id
    FROM reserved AS r
    LEFT JOIN (articles AS a JOIN sources AS src ON src.id = a.source_id)
        ON a.id = ANY(CAST((SELECT ids FROM wanted) AS bigint[]))
    ORDER BY a.published_at, a.id
""")
# A merge pass's reservation (a revision, no story ids) with the stories it compares, in one round trip: those written
# from the revision the previous pass saved with on, that pass's own writes included (a story that absorbed another
# has not been compared whole since); and this pass's revision recorded for the next one. Revisions, not publication
# times: a story of a feed polled an hour late changed now.
_MERGE_PASS = text(f"""
    WITH {_RESERVED.format(count="0")},
    previous AS (SELECT revision FROM story_merge_passes),
    marked AS (
        INSERT INTO story_merge_passes (id, revision) SELECT true, revision FROM reserved
        ON CONFLICT (id) DO UPDATE SET revision = excluded.revision)
    SELECT r.revision, r.new_ids,
           ARRAY(SELECT s.id FROM story_clusters AS s
                 WHERE s.revision >= coalesce((SELECT revision FROM previous), 0) AND s.merged_into_id IS NULL
                       AND s.last_updated_at >= :since  -- the active ones: the first pass reads no old story
                 ORDER BY s.id) AS changed
    FROM reserved AS r
""")
_CHANGED_VOCABULARY = text("SELECT term, documents, revision FROM story_vocabulary WHERE revision > :revision")


class ClusteringCache:
    """A worker's copy of the active clustering state, caught up with PostgreSQL before each use."""

    def __init__(self, velocity_window: timedelta = WINDOW) -> None:
        self.velocity_window = velocity_window  # what velocity counts (app/stories/velocity.py)
        # One job of this process at a time works on the copy (a worker runs many jobs at once): one that fails while
        # waiting its turn has changed nothing, and must not reset the copy under the job whose turn it is.
        self._turn = asyncio.Lock()
        self.reset()

    def reset(self) -> None:
        """A copy to catch up from scratch: at the start, and after a failed transaction (the copy may then hold
        changes PostgreSQL never got)."""
        self.state = StoryState()
        self.story_revision = 0
        self.vocabulary_revision = 0
        self.pruned_at: datetime | None = None
        self.reserved: set[int] = set()  # ids reserved for the current batch: stories it creates
        self.revision: int | None = None  # the current batch's revision, when reserved with its ids
        self.saved_revision: int | None = None  # the revision of this copy's last save
        self.reads = 0  # how many times it read other workers' changes

    @contextlib.asynccontextmanager
    async def locked(self, db: AsyncEngine) -> AsyncIterator[AsyncConnection]:
        """A transaction holding the clustering lock (taken in the round trip that begins it), on this copy's turn in
        the process (the jobs of one worker queue here, not on the lock, and hold no connection while they wait); if
        it fails, this copy starts again, still holding the vocabulary counts of the batches before it that it has not
        written yet (their articles are in stories: nobody counts them again, and dropped, each PostgreSQL outage lost
        up to VOCABULARY_FLUSH_ARTICLES articles' counts). The failed transaction's own counts go with it (its articles
        are clustered, and counted, again), and so do all of them when its commit failed after it wrote them: it may
        have committed, and counts written twice are no better than counts lost."""
        async with self._turn:
            # no copy of the counts (thousands of terms, on every batch): the transaction's own words are journaled
            observed, articles = self.state.observed, self.state.articles_observed
            self.state.journal, committing = [], False
            try:
                async with begin_with(db, CLUSTERING_LOCK.text) as connection:
                    yield connection
                    self.reserved, self.revision = set(), None  # a batch that saved nothing leaves none to the next
                    committing = True
            except BaseException:
                journal, written = self.state.journal or [], self.state.observed is not observed  # save starts anew
                self.reset()
                if not (committing and written):
                    self._still_counting(observed, articles, journal)
                raise
            finally:
                self.state.journal = None

    def _still_counting(self, observed: Counter[str], articles: int, journal: list[list[str]]) -> None:
        """The fresh copy holds counts observed and not written yet: `observed` as the failed transaction began (the
        same Counter, which its articles' words, `journal`, were added to since), `articles` of them. Catching up adds
        the table's to them."""
        for words in journal:
            observed.subtract(words)
        observed = +observed  # terms only the failed transaction had are gone
        state = self.state
        state.observed, state.articles_observed = observed, articles
        state.frequencies, state.documents = observed.copy(), articles

    async def batch(self, connection: AsyncConnection, article_ids: Sequence[int], *, pending: int = 0,
                    ) -> list[Any]:  # fmt: skip
        """The given articles not yet in a story and up to `pending` more understood and waiting, oldest first, with
        what clustering needs (their outlet's authority included); with a story id reserved for each and the save's
        revision, in the same round trip (new stories take ids from the table's sequence, reserved up front, so the
        clusterer itself never waits)."""
        rows = list(await connection.execute(_BATCH, {"ids": list(article_ids), "pending": pending}))
        self._reserved(rows[0])
        return [row for row in rows if row.id is not None and row.cluster_id is None]

    async def reserve(self, connection: AsyncConnection, count: int) -> None:
        """Ids for `count` new stories, and the save's revision (under the lock, so revisions follow commit order)."""
        self._reserved((await connection.execute(_RESERVE, {"n": count})).one())

    async def begin_merge_pass(self, connection: AsyncConnection, since: datetime) -> set[int]:
        """The active stories (updated since `since`) written since the previous merge pass (on any worker) began
        saving, to be compared with the rest; with this pass's revision reserved and recorded as where the next one
        starts (taken back with this transaction if it fails)."""
        row = (await connection.execute(_MERGE_PASS, {"since": since})).one()
        self._reserved(row)
        return set(row.changed)

    async def catch_up(self, connection: AsyncConnection, since: datetime) -> StoryState:
        """Reads what other workers changed since this copy's last save. When the batch's revision, reserved first
        (`locked`), directly follows that save's, nobody has written since: every write is stamped with a number
        from the revision sequence, taken under the lock, so there is nothing to read (two round trips saved)."""
        state = self.state
        if self.revision is None or self.saved_revision is None or self.revision != self.saved_revision + 1:
            await self._read_changes(connection, since)
        if self.pruned_at is None or since - self.pruned_at >= PRUNE_EVERY:
            for story in [s for s in state.stories.values() if s.last_updated < since]:  # frozen: out of the window
                state.forget(story.id)
            self.pruned_at = since
        return state

    async def _read_changes(self, connection: AsyncConnection, since: datetime) -> None:
        state = self.state
        self.reads += 1
        for row in await connection.execute(_CHANGED_VOCABULARY, {"revision": self.vocabulary_revision}):
            # what this worker observed and has not written yet stays counted
            if row.term == TOTAL:
                state.documents = int(row.documents) + state.articles_observed
            else:
                state.frequencies[row.term] = int(row.documents) + state.observed.get(row.term, 0)
            self.vocabulary_revision = max(self.vocabulary_revision, row.revision)
        for row in await connection.execute(_CHANGED_STORIES, {"revision": self.story_revision, "since": since}):
            self.story_revision = max(self.story_revision, row.revision)
            if row.merged_into_id is not None or row.article_count == 0:  # merged, or emptied (stories/repair)
                state.forget(row.id)
                continue
            representative = Representative(row.representative_article_id or 0, row.title, row.authority,
                                            row.published_at)  # fmt: skip
            state.put(Story(row.id, dict(row.centroid), row.centroid_norm, row.article_count,
                            {str(s) for s in row.source_ids}, row.first_seen_at, row.last_updated_at,
                            representative, Counter(row.topic_counts), set(row.languages),
                            [(float(t), str(src)) for t, src in row.recent_arrivals], row.velocity, row.is_breaking,
                            row.breaking_started_at))  # fmt: skip

    def _reserved(self, row: Any) -> None:
        self.state.new_ids = iter(row.new_ids)
        self.reserved, self.revision = set(row.new_ids), row.revision

    async def save(self, connection: AsyncConnection, now: datetime, *, flush_vocabulary: bool = False,
                   ) -> dict[int, int]:  # fmt: skip
        """Writes back what the clusterer changed, with the changed stories' velocity as of `now` (and outbox events:
        one for each story that has just become breaking, one for each existing story that articles joined or that was
        merged); returns where each placed article ended (article -> story).
        Vocabulary counts are statistics: they are written once enough articles have been observed (or when asked),
        not with every batch."""
        state = self.state
        revision = self.revision or await connection.scalar(text("SELECT nextval('story_revision_seq')"))
        if state.articles_observed and (flush_vocabulary or state.articles_observed >= VOCABULARY_FLUSH_ARTICLES):
            vocabulary: Counter[str] = Counter()
            for term, documents in state.observed.items():  # terms come cut (article_terms); any other is cut here
                vocabulary[term[:TERM_LENGTH]] += documents
            vocabulary[TOTAL] += state.articles_observed
            terms = sorted(vocabulary)
            await connection.execute(_SAVE_VOCABULARY, {"term": terms, "documents": [vocabulary[t] for t in terms],
                                                         "revision": revision})  # fmt: skip
            state.observed, state.articles_observed = Counter(), 0  # a new Counter: `locked` tells it was written
        changed = sorted(i for i in state.changed if i in state.stories)
        breaking = [state.stories[i] for i in changed if measure(state.stories[i], now, self.velocity_window)]
        retired = {i: state.resolve(i) for i in state.merged_into}
        if retired:
            await connection.execute(_RETIRE_MERGED, {"story": list(retired), "into": list(retired.values()),
                                                      "revision": revision})  # fmt: skip
        placed = {article: state.resolve(story) for article, story in state.placed.items()}
        # a story that absorbed another is announced even when this save created it: its followers came with the merge
        grown = (set(placed.values()) - self.reserved) | set(retired.values())
        announced = breaking_events(breaking, now)
        updated = update_events([state.stories[i] for i in sorted(grown) if i in state.stories], retired,
                                int(revision or 0))  # fmt: skip
        events = announced | updated
        if changed or placed or events:  # one round trip: the stories, their articles and their outbox events
            await connection.execute(_SAVE, {
                **_story_rows([state.stories[i] for i in changed], revision),
                "article": list(placed), "story": list(placed.values()),
                "event_key": list(events), "event_payload": [json.dumps(e) for e in events.values()],
                "event_topic": [BREAKING_TOPIC] * len(announced) + [STORY_UPDATED_TOPIC] * len(updated),
            })  # fmt: skip
        state.changed, state.placed, state.merged_into, self.reserved, self.revision = set(), {}, {}, set(), None
        # at ingest the merge job picks its own drivers (service.merge_stories); kept, this set would only grow
        state.since_merge = set()
        self.story_revision = self.vocabulary_revision = int(revision or 0)
        self.saved_revision = int(revision) if revision else None
        return placed


_SAVE_VOCABULARY = text("""
    INSERT INTO story_vocabulary (term, documents, revision, seen_at)
    SELECT u.term, u.documents, :revision, now()
    FROM unnest(CAST(:term AS varchar[]), CAST(:documents AS bigint[])) AS u(term, documents)
    ON CONFLICT (term) DO UPDATE
    SET documents = story_vocabulary.documents + excluded.documents, revision = excluded.revision,
        seen_at = excluded.seen_at
""")
_SAVE_STORIES = """
    INSERT INTO story_clusters (id, title, representative_article_id, centroid, centroid_norm, article_count,
                                source_count, source_ids, first_seen_at, last_updated_at, revision, topic_counts,
                                topics, primary_topic, languages, recent_arrivals, velocity, is_breaking,
                                breaking_started_at)
    SELECT u.id, u.title, u.representative, CAST(u.centroid AS jsonb), u.norm,
           u.size, cardinality(CAST(u.sources AS bigint[])), CAST(u.sources AS bigint[]), u.first_seen,
           u.last_updated, :revision, CAST(u.topic_counts AS jsonb), CAST(u.topics AS varchar[]),
           (CAST(u.topics AS varchar[]))[1], CAST(u.languages AS varchar[]), CAST(u.recent AS jsonb), u.velocity,
           u.breaking, u.breaking_started
    FROM unnest(CAST(:id AS bigint[]), CAST(:title AS text[]), CAST(:representative AS bigint[]),
                CAST(:centroid AS text[]), CAST(:norm AS float8[]), CAST(:size AS int[]),
                CAST(:sources AS text[]), CAST(:first_seen AS timestamptz[]), CAST(:last_updated AS timestamptz[]),
                CAST(:topic_counts AS text[]), CAST(:topics AS text[]), CAST(:languages AS text[]),
                CAST(:recent AS text[]), CAST(:velocity AS float8[]), CAST(:breaking AS boolean[]),
                CAST(:breaking_started AS timestamptz[]))
         AS u(id, title, representative, centroid, norm, size, sources, first_seen, last_updated, topic_counts, topics,
              languages, recent, velocity, breaking, breaking_started)
    ON CONFLICT (id) DO UPDATE SET
        topic_counts = excluded.topic_counts, topics = excluded.topics, primary_topic = excluded.primary_topic,
        languages = excluded.languages, recent_arrivals = excluded.recent_arrivals, velocity = excluded.velocity,
        is_breaking = excluded.is_breaking, breaking_started_at = excluded.breaking_started_at,
        title = excluded.title, representative_article_id = excluded.representative_article_id,
        centroid = excluded.centroid, centroid_norm = excluded.centroid_norm,
        article_count = excluded.article_count, source_count = excluded.source_count,
        source_ids = excluded.source_ids, first_seen_at = excluded.first_seen_at,
        last_updated_at = excluded.last_updated_at, revision = excluded.revision
"""
_PLACE_ARTICLES = """
    UPDATE articles AS a SET cluster_id = u.story
    FROM unnest(CAST(:article AS bigint[]), CAST(:story AS bigint[])) AS u(article, story) WHERE a.id = u.article
"""
_ADD_EVENTS = """
    INSERT INTO outbox (topic, dedupe_key, payload)
    SELECT u.topic, u.key, CAST(u.payload AS jsonb)
    FROM unnest(CAST(:event_topic AS varchar[]), CAST(:event_key AS text[]), CAST(:event_payload AS text[]))
        AS u(topic, key, payload)
    ON CONFLICT (dedupe_key) DO NOTHING
"""
# Sibling statements of one WITH run once each, whether read or not; the articles' foreign key to their story is
# checked at the end of the statement, when the stories inserted beside it are there.
_SAVE = text(f"""
    WITH stories AS ({_SAVE_STORIES}), articles_placed AS ({_PLACE_ARTICLES}), events AS ({_ADD_EVENTS})
    SELECT 1
""")
# A merged story's readers follow the story it joined (a reader following both keeps one follow); the surviving
# story's `story.updated` event, written by the same save, tells them once.
_RETIRE_MERGED = text("""
    WITH retired AS (
        UPDATE story_clusters AS s
        SET merged_into_id = u.into_id, centroid = '{}', revision = :revision
        FROM unnest(CAST(:story AS bigint[]), CAST(:into AS bigint[])) AS u(story, into_id) WHERE s.id = u.story
        RETURNING s.id, u.into_id),
    followed AS (
        INSERT INTO story_follows (user_id, story_id, created_at)
        SELECT f.user_id, u.into_id, min(f.created_at)
        FROM story_follows f JOIN unnest(CAST(:story AS bigint[]), CAST(:into AS bigint[])) AS u(story, into_id)
             ON f.story_id = u.story
        GROUP BY f.user_id, u.into_id
        ON CONFLICT DO NOTHING),
    unfollowed AS (
        DELETE FROM story_follows f WHERE f.story_id = ANY(CAST(:story AS bigint[])))
    UPDATE articles AS a SET cluster_id = retired.into_id FROM retired WHERE a.cluster_id = retired.id
""")


def _array(values: Iterable[object]) -> str:
    """A PostgreSQL array literal: arrays of differing lengths cannot travel as one parameter. Values are ids,
    topic names and language codes; quoting keeps any character safe anyway."""
    return "{" + ",".join(json.dumps(str(v), ensure_ascii=False) for v in values) + "}"


def _ids(values: Iterable[str]) -> str:
    """An array literal of ids: digits need no quoting (a large story's outlets are hundreds of them)."""
    return "{" + ",".join(map(str, sorted(map(int, values)))) + "}"


def _story_rows(stories: list[Story], revision: Any) -> dict[str, Any]:
    return {
        "id": [s.id for s in stories],
        "title": [s.representative.title for s in stories],
        "representative": [s.representative.article_id for s in stories],
        "centroid": [json.dumps(s.centroid) for s in stories],
        "norm": [s.norm for s in stories],
        "size": [s.size for s in stories],
        "sources": [_ids(s.sources) for s in stories],
        "topic_counts": [json.dumps(s.topic_counts) for s in stories],
        "topics": [_array(story_topics(s)) for s in stories],
        "languages": [_array(sorted(s.languages)) for s in stories],
        "recent": [json.dumps(s.recent) for s in stories],
        "velocity": [s.velocity for s in stories],
        "breaking": [s.is_breaking for s in stories],
        "breaking_started": [s.breaking_started_at for s in stories],
        "first_seen": [s.first_seen for s in stories],
        "last_updated": [s.last_updated for s in stories],
        "revision": revision,
    }


async def resolve(connection: AsyncConnection, story_id: int) -> int:
    while into := await connection.scalar(select(StoryCluster.merged_into_id).where(StoryCluster.id == story_id)):
        story_id = into
    return story_id
