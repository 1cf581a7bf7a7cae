"""The clustering state: the active stories (centroid, norm, strongest terms, labels) and the vocabulary's
statistics, with the index from strong terms to stories and a record of what changed since the last save. Pure and
synchronous; the clusterer (app/stories/clustering.py) decides, this keeps the numbers and the index right."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from app.entities.evidence import TERM_CHARS

TOP_TERMS = 50  # a story is found through its strongest terms
SELECTIVE_POSTINGS = 200  # a word among the strongest terms of more stories than this identifies none of them
CENTROID_TERMS = 300  # a story keeps its strongest terms only: bounded work and storage for a story of any size


@dataclass(frozen=True, slots=True)
class IncomingArticle:
    id: int
    title: str
    summary: str
    source: str
    at: datetime
    authority: float = 0.5
    topics: tuple[str, ...] = ()
    language: str | None = None
    arrived: datetime | None = None  # when ingest stored it (velocity counts arrivals); `at` when not given


@dataclass
class Story:
    id: int
    centroid: dict[str, float]  # raw term weights summed over the story's articles
    norm: float  # |centroid * idf|, kept up to date incrementally (IDF as of each change)
    size: int
    sources: set[str]
    first_seen: datetime
    last_updated: datetime
    representative: Representative
    topic_counts: Counter[str] = field(default_factory=Counter)  # articles per topic
    languages: set[str] = field(default_factory=set)
    # arrivals of its articles in the velocity window, (epoch seconds, source), and what they measure
    recent: list[tuple[float, str]] = field(default_factory=list)
    velocity: float = 0.0
    is_breaking: bool = False
    breaking_started_at: datetime | None = None
    top: set[str] = field(default_factory=set)  # its strongest terms: what it is found by
    floor: float = 0.0  # the weakest weight among them when they were last chosen


@dataclass(frozen=True, slots=True)
class Representative:
    """The article that stands for a story: the most authoritative outlet's, then the earliest."""

    article_id: int
    title: str
    authority: float
    at: datetime

    def better_than(self, other: Representative) -> bool:
        return (-self.authority, self.at, self.article_id) < (-other.authority, other.at, other.article_id)


# Terms are stored (story_vocabulary.term, varchar(64)) and counted (StoryState.frequencies) this long at most: a
# longer word or name is cut where the terms are made (clustering.article_terms, entity evidence), so memory and
# PostgreSQL agree.
TERM_LENGTH = TERM_CHARS
STORY_TOPIC_SHARE = 0.3  # a story is about a topic when this share of its articles with a topic is


def story_topics(story: Story) -> list[str]:
    """Most common first; at most two. Articles without a topic (in a language the topic classifier does not read)
    are left out of the share, so that an English sports report among German ones still makes a sports story. Their
    number is bounded by the topic labels (one an article, two when close): never fewer than the articles with one."""
    ranked = sorted(story.topic_counts.items(), key=lambda pair: (-pair[1], pair[0]))
    labelled = min(story.size, sum(story.topic_counts.values()))
    return [topic for topic, n in ranked[:2] if n >= STORY_TOPIC_SHARE * labelled]


def top_terms(centroid: dict[str, float], count: int = TOP_TERMS) -> list[str]:
    # what heapq.nlargest returns (documented as equivalent, ties in the mapping's order), with the keys and the
    # sort in C: nlargest compares each term in Python, several times the cost for a story of hundreds of terms
    return sorted(centroid, key=centroid.__getitem__, reverse=True)[:count]


@dataclass
class StoryState:
    """Vocabulary statistics and the active stories, with a record of what changed since the last save."""

    documents: int = 0
    frequencies: Counter[str] = field(default_factory=Counter)
    stories: dict[int, Story] = field(default_factory=dict)
    index: dict[str, set[int]] = field(default_factory=dict)  # top term -> stories
    new_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    merged_into: dict[int, int] = field(default_factory=dict)
    # what changed since it was last saved, for whoever persists the state
    observed: Counter[str] = field(default_factory=Counter)
    articles_observed: int = 0
    # the words observed since a worker's transaction began (ClusteringCache.locked), each article's list of them:
    # what a failed transaction takes back from `observed`; None where nothing is taken back (clustering in memory)
    journal: list[list[str]] | None = None
    changed: set[int] = field(default_factory=set)
    placed: dict[int, int] = field(default_factory=dict)  # article id -> story id
    since_merge: set[int] = field(default_factory=set)  # stories changed since the last merge pass

    def put(self, story: Story) -> None:
        """Adds a story as stored (or replaces the copy held)."""
        self.forget(story.id)
        story.top = set()
        self.stories[story.id] = story
        self._retop(story, {})

    def forget(self, story_id: int) -> None:
        if (story := self.stories.pop(story_id, None)) is not None:
            self._index(story_id, story.top, ())

    def _index(self, story_id: int, before: Iterable[str], after: Iterable[str]) -> None:
        for word in before:
            if (ids := self.index.get(word)) is not None:
                ids.discard(story_id)
                if not ids:
                    del self.index[word]
        for word in after:
            self.index.setdefault(word, set()).add(story_id)

    def observe(self, words: Iterable[str]) -> None:
        words = list(words)
        self.frequencies.update(words)  # a list of words: each counts once (a mapping would add its values)
        self.observed.update(words)
        self.documents += 1
        self.articles_observed += 1
        if self.journal is not None:
            self.journal.append(words)

    def idf(self, word: str) -> float:
        return math.log((self.documents + 1) / (self.frequencies.get(word, 0) + 1)) + 1

    def idfs(self, words: Iterable[str]) -> dict[str, float]:
        """`idf` of each word, in their order: the same numbers, without a method call per word."""
        documents, seen, log = self.documents + 1, self.frequencies.get, math.log
        return {word: log(documents / (seen(word, 0) + 1)) + 1 for word in words}

    def candidates(self, words: list[str], since: datetime, *, sharing: int = 1) -> list[Story]:
        """Active stories with at least `sharing` of `words` among their strongest terms. They are found through the
        selective words only: a word among the strongest of more than SELECTIVE_POSTINGS live stories ("police",
        "coronavirus") still counts towards `sharing`, but never brings a story in by itself."""
        hits: Counter[int] = Counter()
        common = []
        for word in words:
            postings = self.index.get(word)
            if postings is None:
                continue
            if len(postings) <= SELECTIVE_POSTINGS:
                hits.update(postings)
            else:
                common.append(postings)
        if sharing > 1:
            for postings in common:  # set operations in C: the stories found that also have this common word
                hits.update(hits.keys() & postings)
        stories = self.stories
        found = hits.keys() if sharing <= 1 else itertools.compress(hits.keys(), map(sharing.__le__, hits.values()))
        return [story for i in found if (story := stories[i]).last_updated >= since]  # the order hits found them in

    def found(self, words: list[str], since: datetime, *, sharing: int = 1) -> list[Story]:
        """The stories of `candidates`, in no particular order, found by set operations (in C) rather than by counting
        each posting in Python: for `sharing` 2, the stories in two of the selective words' postings, or in one of
        them and in a common word's. The clusterer scores them in any order and asks `candidates` for the order only
        when two of them tie for the best score."""
        if sharing > 2:
            return self.candidates(words, since, sharing=sharing)
        selective: list[set[int]] = []
        common: list[set[int]] = []
        for word in words:
            if (postings := self.index.get(word)) is not None:
                (selective if len(postings) <= SELECTIVE_POSTINGS else common).append(postings)
        if sharing <= 1:
            ids = set().union(*selective)
        else:
            seen: set[int] = set()
            ids = set()
            for postings in selective:
                ids |= seen & postings
                seen |= postings
            for postings in common:
                ids |= seen & postings
        stories = self.stories
        return [story for i in ids if (story := stories[i]).last_updated >= since]

    def resolve(self, story_id: int) -> int:
        while story_id in self.merged_into:
            story_id = self.merged_into[story_id]
        return story_id

    def add_weights(self, story: Story, weights: dict[str, float], idf: dict[str, float] | None = None) -> None:
        """Adds term weights to a story's centroid, keeping its norm, top-term index and size bound (with the
        weights' IDF when the caller has it already: the same numbers)."""
        squared = story.norm * story.norm
        centroid = story.centroid
        idf_of = idf.__getitem__ if idf is not None else self.idf
        for word, weight in weights.items():
            old = centroid.get(word, 0.0)
            factor = idf_of(word)
            squared += ((old + weight) ** 2 - old * old) * factor * factor
            centroid[word] = old + weight
        if len(centroid) > CENTROID_TERMS * 3 // 2:  # trimmed now and then, not on every article
            # the weakest first, as heapq.nsmallest gives them (the same order, so the same float sums), sorted in C
            for word in sorted(centroid, key=centroid.__getitem__)[: len(centroid) - CENTROID_TERMS]:
                squared -= (centroid.pop(word) * self.idf(word)) ** 2
        story.norm = math.sqrt(max(squared, 0.0))
        self._retop(story, weights)
        self.changed.add(story.id)
        self.since_merge.add(story.id)

    def _retop(self, story: Story, weights: dict[str, float]) -> None:
        """Weights only grow (and trimming drops the weakest), so a full story's strongest terms change only when
        a term outside them passes the weakest of them."""
        centroid = story.centroid
        if len(story.top) >= TOP_TERMS and all(w in story.top or centroid.get(w, 0.0) <= story.floor for w in weights):
            return
        before = story.top
        # a centroid of TOP_TERMS terms or fewer is all strongest terms: no ranking needed (most stories are small)
        story.top = set(centroid) if len(centroid) <= TOP_TERMS else set(top_terms(centroid))
        story.floor = min(map(centroid.__getitem__, story.top)) if story.top else 0.0
        self._index(story.id, before - story.top, story.top - before)

    def create(self, article: IncomingArticle, weights: dict[str, float], idf: dict[str, float] | None = None,
               ) -> Story:  # fmt: skip
        representative = Representative(article.id, article.title, article.authority, article.at)
        story = Story(next(self.new_ids), {}, 0.0, 1, {article.source}, article.at, article.at, representative)
        self.stories[story.id] = story
        self.add_weights(story, weights, idf)
        self._label(story, article)
        self.placed[article.id] = story.id
        return story

    def join(self, story: Story, article: IncomingArticle, weights: dict[str, float],
             idf: dict[str, float] | None = None) -> None:  # fmt: skip
        self.add_weights(story, weights, idf)
        story.size += 1
        story.sources.add(article.source)
        story.first_seen = min(story.first_seen, article.at)  # an article older than the story's first (a late feed)
        story.last_updated = max(story.last_updated, article.at)
        candidate = Representative(article.id, article.title, article.authority, article.at)
        if candidate.better_than(story.representative):
            story.representative = candidate
        self._label(story, article)
        self.placed[article.id] = story.id

    @staticmethod
    def _label(story: Story, article: IncomingArticle) -> None:
        story.topic_counts.update(article.topics)
        if article.language:
            story.languages.add(article.language)
        story.recent.append(((article.arrived or article.at).timestamp(), article.source))

    def merge(self, small: Story, large: Story) -> None:
        self.add_weights(large, small.centroid)
        large.size += small.size
        large.sources |= small.sources
        large.first_seen = min(large.first_seen, small.first_seen)
        large.last_updated = max(large.last_updated, small.last_updated)
        if small.representative.better_than(large.representative):
            large.representative = small.representative
        large.topic_counts.update(small.topic_counts)
        large.languages |= small.languages
        large.recent = sorted(large.recent + small.recent)
        large.breaking_started_at = min((t for t in (large.breaking_started_at, small.breaking_started_at) if t),
                                        default=None)  # fmt: skip
        large.is_breaking = large.is_breaking or small.is_breaking
        self.forget(small.id)
        self.merged_into[small.id] = large.id
        self.changed.discard(small.id)
        self.since_merge.discard(small.id)
