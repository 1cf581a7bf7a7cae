"""The clusterer's candidate lookup by set operations (`StoryState.found`) against the counting one
(`StoryState.candidates`), and a placement that does not depend on the order candidates come in."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from app.stories.clustering import IncomingArticle, StoryClusterer, StoryState, article_terms
from app.stories.state import SELECTIVE_POSTINGS, Story

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)


def _crowded_state(rng: random.Random) -> StoryState:
    """Stories sharing words at every rate: two words among the strongest of more than SELECTIVE_POSTINGS stories
    (found only with another), the rest from a pool where each posting list holds a few to a few dozen; a third of
    the stories out of the window."""
    state = StoryState()
    pool = [f"w{i}" for i in range(120)]
    for n in range(3 * SELECTIVE_POSTINGS):
        words = rng.sample(pool, rng.randint(1, 6)) + rng.sample(["police", "court"], rng.randint(0, 2))
        at = NOW - timedelta(hours=rng.choice([1, 5, 60]))
        article = IncomingArticle(n, " ".join(words), "", "1", at)
        state.create(article, {w: float(rng.randint(1, 3)) for w in words})
    assert max(map(len, state.index.values())) > SELECTIVE_POSTINGS
    return state


@pytest.mark.parametrize("sharing", [1, 2, 3])
def test_found_is_the_counting_lookup_as_a_set(sharing: int) -> None:
    rng = random.Random(sharing)
    state = _crowded_state(rng)
    words = [*(f"w{i}" for i in range(120)), "police", "court", "unseen"]
    since = NOW - timedelta(hours=48)
    nonempty = 0
    for _ in range(300):
        lookup = rng.sample(words, rng.randint(1, 8))
        expected = [s.id for s in state.candidates(lookup, since, sharing=sharing)]
        found = [s.id for s in state.found(lookup, since, sharing=sharing)]
        assert len(found) == len(set(found))
        assert set(found) == set(expected)
        nonempty += bool(found)
    assert nonempty > 20


class _Reversed(StoryState):
    """Hands the clusterer its candidates in the opposite order."""

    def found(self, words: list[str], since: datetime, *, sharing: int = 1) -> list[Story]:
        return list(reversed(super().found(words, since, sharing=sharing)))


@pytest.mark.parametrize("state_type", [StoryState, _Reversed])
def test_a_tie_for_the_best_story_is_settled_by_the_ordered_lookup(state_type: type[StoryState]) -> None:
    """Two stories of the very same headline (the second began after the first's lifetime would have let it join,
    then the first was found again): an article scoring the same against both joins the last the ordered lookup
    lists, whatever order the candidates came in."""
    clusterer, state = StoryClusterer(), state_type()
    headline = "Mt. Gox files for bankruptcy protection in Tokyo"
    state.new_ids = iter([9, 2, 17])
    first = state.create(IncomingArticle(1, headline, "", "1", NOW - timedelta(hours=2)), {})
    second = state.create(IncomingArticle(2, headline, "", "2", NOW - timedelta(hours=1)), {})
    article = IncomingArticle(3, headline, "", "3", NOW)
    weights = article_terms(headline, "", None)
    state.observe(weights)
    state.observe(weights)
    for story in (first, second):
        state.add_weights(story, weights)
    assert first.centroid == second.centroid  # identical scores
    assert first.norm == second.norm
    lookup, sharing = clusterer.lookup(state.idfs(article_terms(headline, "", None)), state.index)
    ordered = [s.id for s in StoryState.candidates(state, lookup, NOW - timedelta(hours=48), sharing=sharing)]
    assert sorted(ordered) == [2, 9]
    assert clusterer.assign(state, article) == ordered[-1]
