"""Online story clustering: each new article joins the most similar active story, or starts one.

Similarity is the cosine between the article's TF-IDF vector and the story's centroid (the sum of its articles'
term weights, IDF-weighted), with IDF learned from every article seen; an article must also share at least
`min_shared` of its significant terms with the story. Only stories updated within the window are candidates (older
ones are frozen), found through their strongest terms, and only while the story's span with the article stays within
its lifetime (an article far older than a story, from a feed's backlog, starts its own).

The algorithm is pure and synchronous: it works on a `StoryState` (app/stories/state.py), the active stories and
vocabulary in memory.
Evaluation keeps one state for a whole run; at ingest each worker keeps one, caught up with PostgreSQL before each
batch and written back after it (app/stories/store.py), so both run exactly this code.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.entities.evidence import clash, entity_terms, role_terms
from app.entities.extractor import extract

# the state's types, also importable from here (where the clusterer's callers have always found them)
from app.stories.state import TERM_LENGTH
from app.stories.state import TOP_TERMS as TOP_TERMS
from app.stories.state import IncomingArticle as IncomingArticle
from app.stories.state import Representative as Representative
from app.stories.state import Story as Story
from app.stories.state import StoryState as StoryState
from app.stories.state import story_topics as story_topics
from app.stories.state import top_terms as top_terms
from app.stories.text_features import GRAM_LANGUAGES, terms

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
    # A story spans at most this long, from its earliest article to its latest: it takes no article more than this
    # after its first one, so a running theme (a pandemic, a war) becomes a story a day or two, not one card that
    # swallows months of news by always having a fresh article; nor one more than this before its latest one, so an
    # old article (a new feed's backlog, last year's launch) starts a story of its own rather than joining this
    # week's and, being the earliest, taking over its headline.
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
    own (app/entities/evidence.py), each at most TERM_LENGTH characters long."""
    counts = terms(title, summary, language)
    counts.update(entity_terms(extract(title, summary, language)))
    return counts if max(map(len, counts), default=0) <= TERM_LENGTH else _cut(counts)


def _cut(counts: dict[str, float]) -> dict[str, float]:
    """Terms cut to the length the vocabulary stores: two that share their first TERM_LENGTH characters are one
    term, their weights added (as the stored count of their documents is one)."""
    cut: dict[str, float] = {}
    for term, weight in counts.items():
        cut[term[:TERM_LENGTH]] = cut.get(term[:TERM_LENGTH], 0.0) + weight
    return cut


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
        # the story's span with this article stays within its lifetime (a story's own span does: joins and merges
        # keep it so), whether the article is newer than its first article or older than its latest
        born, ends = article.at - self.policy.lifetime, article.at + self.policy.lifetime

        def score(story: Story) -> float | None:  # for a tie: the loop below computes the same inline
            if not story.norm or story.first_seen < born or story.last_updated > ends:
                return None
            # the dot product over the article's terms, in C (map) rather than a generator: the same sum
            centroid = story.centroid
            value: float = sum(map(operator.mul, query, map(centroid.get, words, _ZEROS))) / (length * story.norm)
            if not plain:
                value += weight * signs(story, bars) - clash(roles, centroid)
            return value

        # the best story at or above the threshold; the candidates come in no particular order, so a tie for the
        # best (rare) is settled as the ordered lookup settles it: the last of them in `candidates` order
        since, threshold = article.at - self.policy.window, best_score
        tied = False
        for story in state.found(lookup, since, sharing=sharing):
            if not story.norm or story.first_seen < born or story.last_updated > ends:
                continue
            centroid = story.centroid  # as `score`, inline: no call per candidate
            value = sum(map(operator.mul, query, map(centroid.get, words, _ZEROS))) / (length * story.norm)
            if not plain:
                value += weight * signs(story, bars) - clash(roles, centroid)
            if value > best_score or (best is None and value == best_score):
                best, best_score, tied = story, value, False
            elif value == best_score:
                tied = True
        if tied:
            best, best_score = None, threshold
            for story in state.candidates(lookup, since, sharing=sharing):
                if (value := score(story)) is not None and value >= best_score:
                    best, best_score = story, value
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
