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
    threshold: float = 0.35
    min_shared: int = 2
    window: timedelta = timedelta(hours=48)
    significant_idf: float = 2.0  # terms rarer than this (by IDF) count as "significant"
    candidate_terms: int = 8  # look stories up by this many of the article's rarest terms


@dataclass(frozen=True, slots=True)
class IncomingArticle:
    id: int
    title: str
    summary: str
    source: str
    at: datetime


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


@dataclass
class MemoryStoryStore:
    """Everything in dictionaries: for evaluation runs and tests of the algorithm."""

    frequencies: Counter[str] = field(default_factory=Counter)
    documents: int = 0
    stories: dict[int, StoryView] = field(default_factory=dict)
    index: dict[str, set[int]] = field(default_factory=dict)

    async def document_frequencies(self, words: list[str]) -> tuple[dict[str, int], int]:
        return {w: self.frequencies[w] for w in words}, self.documents

    async def observe(self, words: list[str]) -> None:
        self.frequencies.update(words)
        self.documents += 1

    async def candidates(self, words: list[str], since: datetime) -> list[StoryView]:
        ids = set().union(*(self.index.get(w, set()) for w in words)) if words else set()
        return [self.stories[i] for i in ids if self.stories[i].last_updated >= since]

    async def create(self, article: IncomingArticle, weights: dict[str, float]) -> int:
        story_id = len(self.stories) + 1
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

    async def assign(self, article: IncomingArticle) -> int:
        counts = terms(article.title, article.summary)
        words = list(counts)
        await self.store.observe(words)
        frequencies, documents = await self.store.document_frequencies(words)
        idf = {w: math.log((documents + 1) / (frequencies.get(w, 0) + 1)) + 1 for w in words}
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
            return await self.store.create(article, counts)
        await self.store.join(best.id, article, counts)
        return best.id
