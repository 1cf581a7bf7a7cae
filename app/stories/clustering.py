"""Online story clustering: each new article joins the most similar active story, or starts one.

Similarity is the cosine between the article's TF-IDF vector and the story's centroid (the sum of its articles'
term weights), with IDF learned from every article seen; an article must also share at least `min_shared` of its
significant terms with the story. Only stories updated within the window are candidates (older ones are frozen).
The store behind it is an interface: in memory for evaluation, PostgreSQL for ingest.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from app.stories.text_features import terms


@dataclass(frozen=True, slots=True)
class ClusteringPolicy:
    """Chosen by cross-validation by story on the UCI dev set, precision first (a wrong merge costs a reader more
    than a split): `newsagg eval clustering --csv ... --folds 2 --seed 5|6` over thresholds {0.3, 0.4} x merge
    thresholds {0.2, 0.3, 0.4}; this setting held out P 0.90-0.97 / R 0.77-0.79 in both orders."""

    threshold: float = 0.3
    min_shared: int = 2
    window: timedelta = timedelta(hours=48)
    significant_idf: float = 2.0  # terms rarer than this (by IDF) count as "significant"
    candidate_terms: int = 8  # look stories up by this many of the article's rarest terms
    merge_threshold: float = 0.2  # two active stories whose centroids are this similar are one story
    merge_every: int = 50  # articles between two merge passes
    merge_top_terms: int = 10  # two stories must share at least `min_shared` of their strongest terms to merge


@dataclass(frozen=True, slots=True)
class IncomingArticle:
    id: int
    title: str
    summary: str
    source: str
    at: datetime
    authority: float = 0.5


@dataclass
class StoryView:
    id: int
    centroid: dict[str, float]
    size: int
    sources: set[str]
    last_updated: datetime


class StoryStore(Protocol):
    async def document_frequencies(self, words: list[str]) -> tuple[dict[str, int], int]: ...
    async def observe(self, words: list[str]) -> None: ...
    async def candidates(self, words: list[str], since: datetime) -> list[StoryView]: ...
    async def create(self, article: IncomingArticle, weights: dict[str, float]) -> int: ...
    async def join(self, story_id: int, article: IncomingArticle, weights: dict[str, float]) -> None: ...
    async def active(self, since: datetime) -> list[StoryView]: ...
    async def merge(self, story_id: int, into_id: int) -> None: ...
    async def resolve(self, story_id: int) -> int: ...


@dataclass
class MemoryStoryStore:
    """Everything in dictionaries: for evaluation runs and tests of the algorithm."""

    frequencies: Counter[str] = field(default_factory=Counter)
    documents: int = 0
    stories: dict[int, StoryView] = field(default_factory=dict)
    index: dict[str, set[int]] = field(default_factory=dict)
    merged_into: dict[int, int] = field(default_factory=dict)
    last_id: int = 0

    async def document_frequencies(self, words: list[str]) -> tuple[dict[str, int], int]:
        return {w: self.frequencies[w] for w in words}, self.documents

    async def observe(self, words: list[str]) -> None:
        self.frequencies.update(words)
        self.documents += 1

    async def candidates(self, words: list[str], since: datetime) -> list[StoryView]:
        ids = set().union(*(self.index.get(w, set()) for w in words)) if words else set()
        return [self.stories[i] for i in ids if self.stories[i].last_updated >= since]

    async def create(self, article: IncomingArticle, weights: dict[str, float]) -> int:
        self.last_id += 1
        story_id = self.last_id
        self.stories[story_id] = StoryView(story_id, {}, 0, set(), article.at)
        await self.join(story_id, article, weights)
        return story_id

    async def join(self, story_id: int, article: IncomingArticle, weights: dict[str, float]) -> None:
        story = self.stories[story_id]
        for word, weight in weights.items():
            story.centroid[word] = story.centroid.get(word, 0.0) + weight
        story.size += 1
        story.sources.add(article.source)
        story.last_updated = max(story.last_updated, article.at)
        for word in weights:
            self.index.setdefault(word, set()).add(story_id)

    async def active(self, since: datetime) -> list[StoryView]:
        return [s for s in self.stories.values() if s.last_updated >= since]

    async def merge(self, story_id: int, into_id: int) -> None:
        story, into = self.stories.pop(story_id), self.stories[into_id]
        for word, weight in story.centroid.items():
            into.centroid[word] = into.centroid.get(word, 0.0) + weight
            self.index[word].discard(story_id)
            self.index[word].add(into_id)
        into.size += story.size
        into.sources |= story.sources
        into.last_updated = max(into.last_updated, story.last_updated)
        self.merged_into[story_id] = into_id

    async def resolve(self, story_id: int) -> int:
        while story_id in self.merged_into:
            story_id = self.merged_into[story_id]
        return story_id


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    dot = sum(weight * b.get(word, 0.0) for word, weight in a.items())
    norm = math.sqrt(sum(w * w for w in a.values())) * math.sqrt(sum(w * w for w in b.values()))
    return dot / norm if norm else 0.0


class StoryClusterer:
    def __init__(self, store: StoryStore, policy: ClusteringPolicy | None = None) -> None:
        self.store = store
        self.policy = policy or ClusteringPolicy()
        self._since_merge = 0

    async def assign(self, article: IncomingArticle) -> int:
        counts = terms(article.title, article.summary)
        words = list(counts)
        await self.store.observe(words)
        idf = await self._idf(words)
        vector = {w: counts[w] * idf[w] for w in words}
        rare_first = sorted(words, key=lambda w: -idf[w])[: self.policy.candidate_terms]
        significant = {w for w in words if idf[w] >= self.policy.significant_idf}
        best, best_score = None, self.policy.threshold
        for story in await self.store.candidates(rare_first, article.at - self.policy.window):
            shared = sum(1 for w in significant if w in story.centroid)
            if shared < min(self.policy.min_shared, len(significant)):
                continue
            centroid = {w: c * idf.get(w, 1.0) for w, c in story.centroid.items()}
            score = _cosine(vector, centroid)
            if score >= best_score:
                best, best_score = story, score
        if best is None:
            story_id = await self.store.create(article, counts)
        else:
            await self.store.join(best.id, article, counts)
            story_id = best.id
        self._since_merge += 1
        if self._since_merge >= self.policy.merge_every:
            await self.merge_pass(article.at)
        return story_id

    async def _idf(self, words: list[str]) -> dict[str, float]:
        """Inverse document frequency, learned from every article seen so far."""
        frequencies, documents = await self.store.document_frequencies(words)
        return {w: math.log((documents + 1) / (frequencies.get(w, 0) + 1)) + 1 for w in words}

    async def merge_pass(self, now: datetime) -> int:
        """Smaller active stories that turn out to be a larger one's are merged into it; returns how many."""
        self._since_merge = 0
        stories = sorted(await self.store.active(now - self.policy.window), key=lambda s: -s.size)
        idf = await self._idf(sorted({w for s in stories for w in s.centroid}))
        vectors = {s.id: {w: c * idf[w] for w, c in s.centroid.items()} for s in stories}
        top = {i: set(sorted(v, key=lambda w: -v[w])[: self.policy.merge_top_terms]) for i, v in vectors.items()}
        by_term: dict[str, list[StoryView]] = {}
        for story in stories:  # largest first, so each story meets larger ones before smaller ones
            for word in top[story.id]:
                by_term.setdefault(word, []).append(story)
        merged: set[int] = set()
        for large in stories:
            if large.id in merged:
                continue
            rivals = {s.id: s for w in top[large.id] for s in by_term[w] if s.size <= large.size and s.id != large.id}
            for small in rivals.values():
                if small.id in merged or len(top[small.id] & top[large.id]) < self.policy.min_shared:
                    continue
                if _cosine(vectors[small.id], vectors[large.id]) >= self.policy.merge_threshold:
                    await self.store.merge(small.id, large.id)
                    merged.add(small.id)
        return len(merged)
