"""Ranking stories for a reader (DESIGN §4): pure, synchronous, over at most a few hundred candidates.

Each story gets a score from
    relevance 0.35  how well its topics match the reader's interests (plus sources they follow); a reader with no
                    interests yet (cold start, anonymous) gets the story's broad appeal: trending and coverage
    freshness 0.25  exp(-lambda * hours since its latest article), lambda 0.5 breaking, 0.1 regular, 0.02 evergreen
    quality   0.20  min(sources / 5, 1) * 0.6 + authority of its lead source * 0.4
    trending  0.10  arrivals and engagement in the last hour, relative to the most trending candidate
    diversity 0.10  1 - its greatest similarity to the stories already placed above it
plus, when the feed has a region (`feed(region:)`, or the reader's home region), locality times its weight:
    locality        0.5 x the share of its articles naming a place in the region + 0.5 x the share of its
                    outlets that are there (a world story one local outlet covers, or one article mentions, is not
                    local); weighed
                    REGION_FEED 1.0 in a region's feed (its
                    stories lead, the rest follow), HOME_REGION 0.15 in a reader's feed (local stories rise without
                    crowding out the rest), COLD_HOME_REGION 1.0 for a reader with a home region and no history yet
                    (their region's trending and most covered stories first: the location cold start)
then x1.3 when breaking and x0.1 when the reader has already opened one of its articles. The order is chosen
greedily by maximal marginal relevance (alpha 0.7): each place goes to the story maximising
0.7 * score - 0.3 * similarity to the stories above, where similarity mixes topic distribution and headline terms.
Within the first 20 places a source leads at most 2 stories (when other sources have stories left to place).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import mmh3
import numpy as np

from app.stories.text_features import terms
from app.topics.keywords import Topic

WEIGHTS = {"relevance": 0.35, "freshness": 0.25, "quality": 0.20, "trending": 0.10, "diversity": 0.10}
BREAKING_BOOST = 1.3
READ_PENALTY = 0.1
MMR_ALPHA = 0.7
PER_SOURCE = 2
CAPPED_PLACES = 20
REGION_FEED, HOME_REGION, COLD_HOME_REGION = 1.0, 0.15, 1.0  # the weight of locality (above)
FOLLOWED_SOURCE = 0.5  # added to relevance when a source the reader follows covered the story
EVERGREEN_TOPICS = frozenset({Topic.SCIENCE.value, Topic.HEALTH.value})
TOPIC_ORDER = [t.value for t in Topic]
TITLE_DIMENSIONS = 256


class FreshnessClass(enum.StrEnum):
    BREAKING = "breaking"
    REGULAR = "regular"
    EVERGREEN = "evergreen"


DECAY_PER_HOUR = {FreshnessClass.BREAKING: 0.5, FreshnessClass.REGULAR: 0.1, FreshnessClass.EVERGREEN: 0.02}


@dataclass(frozen=True, slots=True)
class Candidate:
    story_id: int
    title: str
    topic_counts: Mapping[str, int]
    source_ids: tuple[int, ...]
    lead_source_id: int | None  # the source of the article shown on the card
    authority: float  # of the lead source
    source_count: int
    last_updated_at: datetime
    is_breaking: bool
    locality: float = 0.0  # 0..1 (above); 0 without a region


@dataclass(frozen=True, slots=True)
class Profile:
    """What is known of the reader; empty for an anonymous caller."""

    interests: Mapping[str, float] = field(default_factory=dict)  # topic -> weight (followed topics at least 1)
    followed_sources: frozenset[int] = frozenset()
    read_stories: frozenset[int] = frozenset()
    locality_weight: float = 0.0  # REGION_FEED, HOME_REGION or COLD_HOME_REGION when the feed has a region

    @property
    def cold(self) -> bool:
        return not any(w > 0 for w in self.interests.values()) and not self.followed_sources


@dataclass(frozen=True, slots=True)
class Signals:
    relevance: float
    freshness: float
    freshness_class: FreshnessClass
    quality: float
    trending: float
    diversity: float
    breaking_boost: float
    read_penalty: float
    score: float
    locality: float = 0.0  # last: snapshots written before it existed still load


@dataclass(frozen=True, slots=True)
class Ranked:
    story_id: int
    signals: Signals


def freshness_class(candidate: Candidate) -> FreshnessClass:
    if candidate.is_breaking:
        return FreshnessClass.BREAKING
    topics = set(candidate.topic_counts)
    return FreshnessClass.EVERGREEN if topics and topics <= EVERGREEN_TOPICS else FreshnessClass.REGULAR


def freshness(candidate: Candidate, now: datetime) -> float:
    hours = max((now - candidate.last_updated_at).total_seconds() / 3600, 0.0)
    return math.exp(-DECAY_PER_HOUR[freshness_class(candidate)] * hours)


COVERAGE_SHARE = 0.6  # of quality: how many outlets cover the story (the rest: the lead source's authority)
FULL_COVERAGE = 5  # outlets at which coverage counts in full


def quality(candidate: Candidate) -> float:
    coverage = min(candidate.source_count / FULL_COVERAGE, 1.0)
    return coverage * COVERAGE_SHARE + min(max(candidate.authority, 0.0), 1.0) * (1 - COVERAGE_SHARE)


def _topic_distribution(candidate: Candidate) -> dict[str, float]:
    total = sum(max(c, 0) for c in candidate.topic_counts.values())
    return {t: c / total for t, c in candidate.topic_counts.items() if c > 0} if total else {}


def relevance(candidate: Candidate, profile: Profile, trending: float) -> float:
    if profile.cold:
        return 0.5 * trending + 0.5 * min(candidate.source_count / 5, 1.0)
    top = max((abs(w) for w in profile.interests.values()), default=0.0)
    topical = 0.0
    if top > 0:
        distribution = _topic_distribution(candidate)
        topical = sum(p * profile.interests.get(t, 0.0) for t, p in distribution.items()) / top
    followed = FOLLOWED_SOURCE if profile.followed_sources.intersection(candidate.source_ids) else 0.0
    return min(max(topical + followed, 0.0), 1.0)


def similarity_vectors(candidates: Sequence[Candidate]) -> np.ndarray:
    """Unit rows whose dot products are 0.5 * topic cosine + 0.5 * headline-term cosine."""
    topics = np.zeros((len(candidates), len(TOPIC_ORDER)))
    words = np.zeros((len(candidates), TITLE_DIMENSIONS))
    index = {t: i for i, t in enumerate(TOPIC_ORDER)}
    for row, candidate in enumerate(candidates):
        for topic, share in _topic_distribution(candidate).items():
            if topic in index:
                topics[row, index[topic]] = share
        for term, weight in terms(candidate.title).items():
            words[row, mmh3.hash(term, signed=False) % TITLE_DIMENSIONS] += weight
    for block in (topics, words):
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        np.divide(block, norms, out=block, where=norms > 0)
    return np.hstack([topics, words]) * math.sqrt(0.5)


def rank(candidates: Sequence[Candidate], profile: Profile, trending: Mapping[int, float], now: datetime,
         *, diversify: bool = True) -> list[Ranked]:  # fmt: skip
    """Every candidate, in feed order. `trending` holds raw trending scores by story id (any scale)."""
    n = len(candidates)
    if n == 0:
        return []
    top_trend = max((trending.get(c.story_id, 0.0) for c in candidates), default=0.0)
    trend = np.array([math.log1p(trending.get(c.story_id, 0.0)) / math.log1p(top_trend) if top_trend > 0 else 0.0
                      for c in candidates])  # fmt: skip
    rel = np.array([relevance(c, profile, float(trend[i])) for i, c in enumerate(candidates)])
    fresh = np.array([freshness(c, now) for c in candidates])
    qual = np.array([quality(c) for c in candidates])
    boost = np.array([BREAKING_BOOST if c.is_breaking else 1.0 for c in candidates])
    penalty = np.array([READ_PENALTY if c.story_id in profile.read_stories else 1.0 for c in candidates])
    local = np.array([c.locality for c in candidates])
    static = (WEIGHTS["relevance"] * rel + WEIGHTS["freshness"] * fresh + WEIGHTS["quality"] * qual
              + WEIGHTS["trending"] * trend + profile.locality_weight * local)  # fmt: skip
    vectors = similarity_vectors(candidates) if diversify else np.zeros((n, 1))
    leads = [c.lead_source_id for c in candidates]
    # value = alpha * score - (1 - alpha) * closest, with score = (static + w_div * (1 - closest)) * multipliers,
    # is a - b * closest: two arrays fixed for the whole selection
    multiplier = boost * penalty
    a = MMR_ALPHA * (static + WEIGHTS["diversity"]) * multiplier
    b = MMR_ALPHA * WEIGHTS["diversity"] * multiplier + (1 - MMR_ALPHA)
    closest = np.zeros(n)  # greatest similarity to any story placed so far
    per_source: dict[int, int] = {}
    placed: list[Ranked] = []
    for place in range(n):
        value = a - b * closest
        if place < CAPPED_PLACES and per_source:
            full = [i for i, lead in enumerate(leads) if lead is not None and per_source.get(lead, 0) >= PER_SOURCE]
            if full:
                held = value[full].copy()
                value[full] = -np.inf
                if np.isneginf(value).all():  # only capped sources have stories left: the cap gives way
                    value[full] = held
        best = int(np.argmax(value))
        novelty = 1.0 - float(closest[best])
        a[best] = -np.inf  # placed
        lead = leads[best]
        if lead is not None:
            per_source[lead] = per_source.get(lead, 0) + 1
        c = candidates[best]
        placed.append(Ranked(c.story_id, Signals(
            relevance=float(rel[best]), freshness=float(fresh[best]), freshness_class=freshness_class(c),
            quality=float(qual[best]), trending=float(trend[best]), diversity=novelty,
            breaking_boost=float(boost[best]), read_penalty=float(penalty[best]), locality=float(local[best]),
            score=float((static[best] + WEIGHTS["diversity"] * novelty) * multiplier[best]),
        )))  # fmt: skip
        if diversify:
            np.maximum(closest, vectors @ vectors[best], out=closest)
    return placed
