"""Online story clustering: each new article joins the most similar active story, or starts one.

Similarity is the cosine between the article's TF-IDF vector and the story's centroid (the sum of its articles'
term weights, IDF-weighted), with IDF learned from every article seen; an article must also share at least
`min_shared` of its significant terms with the story. Only stories updated within the window are candidates (older
ones are frozen), found through their strongest terms.

The algorithm is pure and synchronous: it works on a `StoryState`, the active stories and vocabulary in memory.
Evaluation keeps one state for a whole run; at ingest each worker keeps one, caught up with PostgreSQL before each
batch and written back after it (app/stories/store.py), so both run exactly this code.
"""

from __future__ import annotations

import heapq
import itertools
import math
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from app.entities.evidence import clash, entity_terms, role_terms
from app.entities.extractor import extract
from app.stories.text_features import GRAM_LANGUAGES, terms

TOP_TERMS = 50  # a story is found through its strongest terms
SELECTIVE_POSTINGS = 200  # a word among the strongest terms of more stories than this identifies none of them
CENTROID_TERMS = 300  # a story keeps its strongest terms only: bounded work and storage for a story of any size
_ZEROS = itertools.repeat(0.0)  # the weight of a term a centroid lacks, for map()


@dataclass(frozen=True, slots=True)
class ClusteringPolicy:
    """Chosen on the UCI dev set, precision first (a wrong merge costs a reader more than a split), both by
    cross-validation by story (`newsagg eval clustering --folds 4`, seeds 5 and 6, both orders: P 0.978, R 0.745;
    since terms are stemmed by Snowball, P 0.975, R 0.762) and on the whole file, where all 44 stories are live at
    once (time and three shuffles: P 0.90-0.92, R 0.78; with Snowball, time and four shuffles: P 0.88-0.92, R 0.79).
    Whole-file precision stays near 0.92 for every setting tried: some labelled stories are one event split in two
    (GM's recall, one day's market news). Merging on 20 strongest terms rather than 10 gained recall at no cost in
    precision; a merge threshold of 0.15 gained more recall but cost whole-file precision (0.85-0.90). With the
    signature evidence and hyphenated parts: CV P 0.972, R 0.803; whole file P 0.90 (time) / 0.88 (shuffled),
    R 0.82, of which GM's two probes and the market news merged cost 0.06 of precision (`--errors 5` lists them).
    Tried and left out by these numbers: a one-shared-term merge for stories of one or two articles (+0.002 F1,
    -0.005 P), merges asking each story's 1-5 strongest terms to be among the other's (-0.01 to -0.2 recall), a
    signature word bringing in stories the lookup does not find (-0.01 to -0.03 P), thresholds 0.17-0.23."""

    threshold: float = 0.2
    # The threshold for an article in a language cut into character n-grams (text_features.GRAM_LANGUAGES): two
    # unrelated Chinese headlines share more short grams ("外交" of "foreign ministry", "拜登") than two English ones
    # share words. Chosen by cross-validation by story over UCI dev, ECOB Chinese and English at once (`newsagg eval
    # clustering --csv ... --tune threshold=0.2,0.25 --tune gram_threshold=0.2,0.25,0.3,0.35`, docs/clustering.md):
    # held-out Chinese P 0.892 -> 0.953, F1 0.907 -> 0.917 (time), 0.908 -> 0.946, 0.909 -> 0.916 (shuffled); the
    # word threshold stays 0.2 (0.25 costs UCI and ECOB English F1 for precision they stay capped below 0.95 at).
    # None: `threshold`.
    gram_threshold: float | None = 0.25
    min_shared: int = 2
    window: timedelta = timedelta(hours=48)
    # A story takes no article more than this long after its first one: a running theme (a pandemic, a war) becomes
    # a story a day or two, not one card that swallows months of news by always having a fresh article.
    lifetime: timedelta = timedelta(days=3)
    significant_idf: float = 2.0  # terms rarer than this (by IDF) count as "significant"
    candidate_terms: int = 8  # look stories up by this many of the article's rarest terms
    merge_threshold: float = 0.2  # two active stories whose centroids are this similar are one story
    merge_every: int = 50  # articles between two merge passes (evaluation; ingest merges on a schedule)
    merge_top_terms: int = 20  # two stories must share at least `merge_min_shared` of their strongest terms to merge
    merge_min_shared: int = 2
    # An article whose word is nearly all of the story's ("Gox" in the Mt. Gox bankruptcy) needs that much less
    # similarity: the headlines of one story that share its name and little else ("Bitcoin's enthusiasts weather
    # chaotic week") join it. Cross-validated by story on UCI dev (both orders, seeds 5 and 6): recall 0.77 -> 0.81
    # at precision 0.97; weights 0.15-0.2 cost precision (0.94-0.96) for no more recall.
    signature_weight: float = 0.1
    signature_share: float = 0.9
    signature_support: int = 5


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


STORY_TOPIC_SHARE = 0.3  # a story is about a topic when this share of its articles with a topic is


def story_topics(story: Story) -> list[str]:
    """Most common first; at most two. Articles without a topic (in a language the topic classifier does not read)
    are left out of the share, so that an English sports report among German ones still makes a sports story. Their
    number is bounded by the topic labels (one an article, two when close): never fewer than the articles with one."""
    ranked = sorted(story.topic_counts.items(), key=lambda pair: (-pair[1], pair[0]))
    labelled = min(story.size, sum(story.topic_counts.values()))
    return [topic for topic, n in ranked[:2] if n >= STORY_TOPIC_SHARE * labelled]


def top_terms(centroid: dict[str, float], count: int = TOP_TERMS) -> list[str]:
    return heapq.nlargest(count, centroid, key=centroid.__getitem__)


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
            for word in heapq.nsmallest(len(centroid) - CENTROID_TERMS, centroid, key=centroid.__getitem__):
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


@dataclass(frozen=True, slots=True)
class _Weighted:
    """A story's centroid weighted by IDF, with its norm and strongest terms: computed once per merge pass."""

    vector: dict[str, float]
    norm: float
    top: frozenset[str]

    @classmethod
    def of(cls, story: Story, state: StoryState, top: int) -> _Weighted:
        vector = {w: c * state.idf(w) for w, c in story.centroid.items()}
        norm = math.sqrt(sum(w * w for w in vector.values()))
        return cls(vector, norm, frozenset(top_terms(vector, top)))

    def cosine(self, other: _Weighted) -> float:
        small, large = (self, other) if len(self.vector) <= len(other.vector) else (other, self)
        dot = sum(weight * large.vector.get(word, 0.0) for word, weight in small.vector.items())
        norm = self.norm * other.norm
        return dot / norm if norm else 0.0


def signature(state: StoryState, story: Story, counts: dict[str, float], policy: ClusteringPolicy) -> float:
    """1 when the article has a word that is the story's signature: seen at least `signature_support` times, and
    nearly all of it (`signature_share` of its weight per article seen) in this story, as a name that appears with
    one event ("Gox", "Spritz", "Sbarro") does while the event runs; else 0. Counts run over every article seen, so
    a name in the news for months signs no story of this week."""
    return signs(story, signature_bars(state, counts, policy))


def signature_bars(state: StoryState, counts: dict[str, float], policy: ClusteringPolicy,
                   ) -> tuple[list[str], list[float]]:  # fmt: skip
    """The article's words seen often enough to sign a story, and the weight a story needs of each to be signed:
    found once per article, then checked against each candidate story (`signs`)."""
    frequencies, words, bars = state.frequencies, [], []
    for word in counts:
        seen = frequencies.get(word, 0)
        if seen >= policy.signature_support:
            words.append(word)
            bars.append(policy.signature_share * seen)
    return words, bars


def signs(story: Story, bars: tuple[list[str], list[float]]) -> float:
    words, needed = bars
    return 1.0 if any(map(operator.ge, map(story.centroid.get, words, _ZEROS), needed)) else 0.0


def article_terms(title: str, summary: str, language: str | None) -> dict[str, float]:
    """What an article is matched by: its words (app/stories/text_features.py) and its entities as terms of their
    own (app/entities/evidence.py)."""
    counts = terms(title, summary, language)
    counts.update(entity_terms(extract(title, summary, language)))
    return counts


class StoryClusterer:
    def __init__(self, policy: ClusteringPolicy | None = None) -> None:
        self.policy = policy or ClusteringPolicy()

    def threshold(self, language: str | None) -> float:
        gram = self.policy.gram_threshold
        return gram if gram is not None and language in GRAM_LANGUAGES else self.policy.threshold

    def lookup(self, idf: dict[str, float], index: dict[str, set[int]]) -> tuple[list[str], int]:
        """How an article (its terms' IDF) finds its candidate stories: its rarest terms that some live story is
        found by (a headline cut into character bigrams has many, most of them unique to it), and how many of them
        a story must have among its strongest terms (`min_shared`, or fewer when the article has fewer significant
        terms)."""
        # one stable sort (ties keep the article's term order, as heapq.nlargest does) serves both choices
        ranked = sorted(idf, key=idf.__getitem__, reverse=True)
        count, floor = self.policy.candidate_terms, self.policy.significant_idf
        significant = sum(1 for w in ranked[:count] if idf[w] >= floor)
        indexed = list(itertools.islice((w for w in ranked if w in index), count))
        return indexed, max(min(self.policy.min_shared, significant), 1)

    def assign(self, state: StoryState, article: IncomingArticle) -> int:
        counts = article_terms(article.title, article.summary, article.language)
        state.observe(counts)
        idf = state.idfs(counts)
        words = list(counts)
        vector = list(map(operator.mul, counts.values(), idf.values()))
        length = math.sqrt(sum(map(operator.mul, vector, vector)))
        # against raw centroid weights: idf applied once here
        query = list(map(operator.mul, vector, idf.values()))
        lookup, sharing = self.lookup(idf, state.index)
        best, best_score = None, self.threshold(article.language)
        bars, roles = signature_bars(state, counts, self.policy), role_terms(counts)
        weight, plain = self.policy.signature_weight, not bars[0] and not roles  # no evidence can count
        born = article.at - self.policy.lifetime
        for story in state.candidates(lookup, article.at - self.policy.window, sharing=sharing):
            if not story.norm or story.first_seen < born:
                continue
            # the dot product over the article's terms, in C (map) rather than a generator: the same sum
            centroid = story.centroid
            score = sum(map(operator.mul, query, map(centroid.get, words, _ZEROS))) / (length * story.norm)
            if not plain:
                score += weight * signs(story, bars) - clash(roles, centroid)
            if score >= best_score:
                best, best_score = story, score
        if best is None:
            return state.create(article, counts, idf).id
        state.join(best, article, counts, idf)
        return best.id

    def evidence(self, state: StoryState, story: Story, counts: dict[str, float]) -> float:
        """What an article and a story have in common beyond their cosine, added to it: each signal is a pure score
        of (article, story) times its weight in the policy; a different person in a role the story's holder has
        (another mayor) counts against (app/entities/evidence.py)."""
        return self.evidence_of(state, counts)(story)

    def evidence_of(self, state: StoryState, counts: dict[str, float]) -> Callable[[Story], float]:
        """`evidence` for one article against any story: what depends on the article alone is found once."""
        bars, roles = signature_bars(state, counts, self.policy), role_terms(counts)
        weight = self.policy.signature_weight
        return lambda story: weight * signs(story, bars) - clash(roles, story.centroid)

    def assign_all(self, state: StoryState, articles: Iterable[IncomingArticle]) -> dict[int, int]:
        """Article id -> story id; with a merge pass every `merge_every` articles."""
        placed = {}
        for count, article in enumerate(articles, start=1):
            placed[article.id] = self.assign(state, article)
            if count % self.policy.merge_every == 0:
                self.merge_pass(state, article.at)
        return placed

    def merge_pass(self, state: StoryState, now: datetime) -> int:
        """Stories changed since the last pass are compared with every active story sharing their strongest
        terms; the smaller of a pair that proves to be one story is merged into the larger. Returns how many."""
        since = now - self.policy.window
        drivers = sorted((state.stories[i] for i in state.since_merge if i in state.stories), key=lambda s: -s.size)
        state.since_merge = set()
        weighted: dict[int, _Weighted] = {}

        def prepare(story: Story) -> _Weighted:
            if story.id not in weighted:
                weighted[story.id] = _Weighted.of(story, state, self.policy.merge_top_terms)
            return weighted[story.id]

        merged = 0
        for driver in drivers:
            if driver.id not in state.stories:
                continue
            for rival in state.candidates(sorted(prepare(driver).top), since):
                if rival.id == driver.id or driver.id not in state.stories:
                    continue
                if (
                    max(rival.last_updated, driver.last_updated) - min(rival.first_seen, driver.first_seen)
                    > self.policy.lifetime
                ):
                    continue
                ours, theirs = prepare(driver), prepare(rival)
                if len(theirs.top & ours.top) < self.policy.merge_min_shared:
                    continue
                if theirs.cosine(ours) >= self.policy.merge_threshold:
                    small, large = sorted((rival, driver), key=lambda s: (s.size, -s.id))
                    state.merge(small, large)
                    weighted.pop(large.id)
                    merged += 1
        return merged
