"""Every query the feeds make: candidate stories, a reader's profile, stand-in lead articles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import text

from app.db.engine import Executor
from app.feed.ranking import COVERAGE_SHARE, DECAY_PER_HOUR, FULL_COVERAGE, WEIGHTS, Candidate, FreshnessClass

# A cheap first cut in SQL, shaped like the ranking with its own weights (freshness at the regular decay, coverage's
# share of quality, the reader's topics; breaking stands in for its boost), so the few hundred stories the ranker
# sees are the ones it would rank highest.
FIRST_CUT_BREAKING = 0.2
# The share of a story's outlets in the region; the first cut counts a story naming a place there in full (the
# share of its articles that do is applied to the few hundred candidates, below)
LOCAL_OUTLETS_SQL = """CAST((SELECT count(*) FROM unnest(s.source_ids) AS o(id)
                             WHERE o.id = ANY(CAST(:local_sources AS bigint[]))) AS float8)
                        / greatest(cardinality(s.source_ids), 1)"""
FIRST_CUT_LOCALITY = f"""CASE WHEN s.id = ANY(CAST(:local_stories AS bigint[])) THEN 0.5 ELSE 0 END
                        + 0.5 * ({LOCAL_OUTLETS_SQL})"""
_CANDIDATES = """
    WITH best AS (
        SELECT s.id, s.title, s.topics, s.topic_counts, s.source_ids, s.source_count, s.last_updated_at,
               s.is_breaking, s.representative_article_id,
               s.article_count, CAST({local_outlets} AS float8) AS local_outlets
        FROM story_clusters s
        WHERE s.merged_into_id IS NULL AND s.last_updated_at >= :since AND s.article_count > 0 {filters}
        ORDER BY {freshness} * exp(-{decay} * greatest(CAST(extract(epoch FROM (:now - s.last_updated_at)) AS float8)
                                                        / 3600, 0))
                 + {coverage_per_source} * least(s.source_count, {full_coverage})
                 + CASE WHEN s.is_breaking THEN {breaking} ELSE 0 END
                 + CASE WHEN s.topics && CAST(:interests AS varchar[]) THEN {relevance} ELSE 0 END
                 + CAST(:locality_weight AS float8) * ({first_cut_locality}) DESC,
                 s.id DESC
        LIMIT :limit
    )
    SELECT best.*, a.source_id AS lead_source_id, coalesce(src.authority, 0.5) AS authority
    FROM best
    LEFT JOIN articles a ON a.id = best.representative_article_id
    LEFT JOIN sources src ON src.id = a.source_id
    ORDER BY best.id DESC
""".format(  # the weights written in, not bound: next to least(int, 5) a bound one is typed integer
    freshness=WEIGHTS["freshness"],
    decay=DECAY_PER_HOUR[FreshnessClass.REGULAR],
    coverage_per_source=WEIGHTS["quality"] * COVERAGE_SHARE / FULL_COVERAGE,
    full_coverage=FULL_COVERAGE,
    breaking=FIRST_CUT_BREAKING,
    relevance=WEIGHTS["relevance"],
    local_outlets=LOCAL_OUTLETS_SQL,
    first_cut_locality=FIRST_CUT_LOCALITY,
    filters="{filters}",
)


@dataclass(frozen=True, slots=True)
class Locality:
    """A region's stories (story id -> its articles naming a place there) and outlets; weighed `weight`."""

    stories: Mapping[int, int] = field(default_factory=dict)
    sources: Sequence[int] = ()
    weight: float = 0.0

    def of(self, story_id: int, articles: int, local_outlets: float) -> float:
        """app/feed/ranking.py's locality: 0.5 x the share of its articles about the region + 0.5 x the share of its
        outlets there."""
        about = min(self.stories.get(story_id, 0) / articles, 1.0) if articles else 0.0
        return 0.5 * about + 0.5 * local_outlets


async def candidates(db: Executor, *, now: datetime, since: datetime, limit: int, languages: Sequence[str] = (),
                     topic: str | None = None, muted: Sequence[int] = (), interests: Sequence[str] = (),
                     locality: Locality | None = None) -> list[Candidate]:  # fmt: skip
    """The `limit` live stories updated since `since` that the first cut ranks best (returned newest id first): with
    an article in any of `languages`, about `topic`, and not covered only by `muted` sources."""
    locality = locality or Locality()
    filters: list[str] = []
    params: dict[str, object] = {
        "now": now, "since": since, "limit": limit, "interests": list(interests),
        "local_stories": list(locality.stories), "local_sources": list(locality.sources),
        "locality_weight": locality.weight,
    }  # fmt: skip
    if languages:
        filters.append("AND s.languages && CAST(:languages AS varchar[])")
        params["languages"] = list(languages)
    if topic:
        filters.append("AND s.topics @> CAST(:topic AS varchar[])")
        params["topic"] = [topic]
    if muted:
        filters.append("AND NOT (s.source_ids <@ CAST(:muted AS bigint[]))")
        params["muted"] = list(muted)
    rows = await db.execute(text(_CANDIDATES.format(filters=" ".join(filters))), params)
    return [
        Candidate(
            story_id=r.id, title=r.title, topic_counts=r.topic_counts or dict.fromkeys(r.topics, 1),
            source_ids=tuple(r.source_ids), lead_source_id=r.lead_source_id, authority=r.authority,
            source_count=r.source_count, last_updated_at=r.last_updated_at, is_breaking=r.is_breaking,
            locality=locality.of(r.id, r.article_count, r.local_outlets),
        )
        for r in rows
    ]  # fmt: skip


_STAND_INS = text("""
    SELECT DISTINCT ON (a.cluster_id) a.cluster_id, a.id, a.source_id, coalesce(src.authority, 0.5) AS authority
    FROM articles a JOIN sources src ON src.id = a.source_id
    WHERE a.cluster_id = ANY(CAST(:stories AS bigint[])) AND NOT (a.source_id = ANY(CAST(:muted AS bigint[])))
    ORDER BY a.cluster_id, src.authority DESC, a.published_at, a.id
""")


async def stand_in_leads(
    db: Executor, story_ids: Sequence[int], muted: Sequence[int]
) -> dict[int, tuple[int, int, float]]:
    """Story id -> (article id, source id, authority) of its best article from a source not muted."""
    if not story_ids:
        return {}
    rows = await db.execute(_STAND_INS, {"stories": list(story_ids), "muted": list(muted)})
    return {r.cluster_id: (r.id, r.source_id, r.authority) for r in rows}


_READ_STORIES = text("""
    SELECT DISTINCT a.cluster_id FROM read_events r JOIN articles a ON a.id = r.article_id
    WHERE r.user_id = :user AND r.at >= :since AND a.cluster_id IS NOT NULL
""")


async def read_stories(db: Executor, user_id: int, since: datetime) -> set[int]:
    """Stories of which the reader opened, read, shared, saved or dismissed an article since `since`."""
    return set(await db.scalars(_READ_STORIES, {"user": user_id, "since": since}))
