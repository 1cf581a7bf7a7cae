"""The ranking itself (app/feed/ranking.py), without a database: weights, classes, diversity, the source cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.feed.ranking import Candidate, FreshnessClass, Profile, rank

NOW = datetime(2026, 11, 21, 12, tzinfo=UTC)


def story(story_id: int, title: str, *, topics: dict[str, int] | None = None, lead: int = 1, sources: int = 3,
          hours: float = 1.0, breaking: bool = False, authority: float = 0.5) -> Candidate:  # fmt: skip
    return Candidate(story_id, title, topics or {"world": 1}, tuple(range(lead, lead + sources)), lead, authority,
                     sources, NOW - timedelta(hours=hours), breaking)  # fmt: skip


def order(candidates: list[Candidate], profile: Profile | None = None, **kwargs: bool) -> list[int]:
    return [r.story_id for r in rank(candidates, profile or Profile(), {}, NOW, **kwargs)]


def test_near_identical_stories_are_kept_apart() -> None:
    candidates = [
        story(1, "Central bank raises interest rates again", topics={"business": 3}, lead=1),
        story(2, "Central bank raises interest rates again, markets fall", topics={"business": 3}, lead=2),
        story(3, "Volcano erupts on remote island", topics={"science": 1, "world": 1}, lead=3, hours=1.5),
    ]
    assert order(candidates, diversify=False) == [1, 2, 3]
    assert order(candidates) == [1, 3, 2]


def test_interests_and_followed_sources_make_a_story_relevant() -> None:
    candidates = [story(1, "Election night results", topics={"politics": 2}, sources=5),
                  story(2, "Derby ends in a draw", topics={"sports": 2}, lead=40, sources=1)]  # fmt: skip
    assert order(candidates) == [1, 2]  # cold start: the better covered story
    assert order(candidates, Profile(interests={"sports": 1.0})) == [2, 1]
    assert order(candidates, Profile(followed_sources=frozenset({40}))) == [2, 1]
    assert order(candidates, Profile(interests={"sports": 1.0}, read_stories=frozenset({2}))) == [1, 2]


def test_breaking_decays_fast_and_evergreen_slowly() -> None:
    ranked = rank([story(1, "Flash flood warning", breaking=True, hours=4),
                   story(2, "How coral reefs recover", topics={"science": 1}, hours=4),
                   story(3, "Town fair opens", hours=4)], Profile(), {}, NOW)  # fmt: skip
    signals = {r.story_id: r.signals for r in ranked}
    assert signals[1].freshness_class is FreshnessClass.BREAKING
    assert signals[1].breaking_boost == 1.3
    assert signals[2].freshness_class is FreshnessClass.EVERGREEN
    assert signals[1].freshness < signals[3].freshness < signals[2].freshness


def test_a_source_leads_at_most_two_of_the_top_twenty_unless_nothing_else_is_left() -> None:
    strong = [story(i, f"Wire report number {i} on {i * 7} things", lead=1, sources=5, authority=1.0)
              for i in range(1, 11)]  # fmt: skip
    weak = [story(100 + i, f"Local note {i} of the day", lead=100 + i, sources=1, hours=6, authority=0.1)
            for i in range(5)]  # fmt: skip
    ranked = order(strong + weak)
    assert sum(1 for i in ranked[:7] if i < 100) == 2  # two wire stories, then every other source's
    assert ranked[7:] == [i for i in ranked[7:] if i < 100]  # then only the wire is left: it fills the rest
    assert len(ranked) == 15


def test_trending_counts_relative_to_the_most_trending_candidate() -> None:
    candidates = [story(1, "Quiet story"), story(2, "Viral story")]
    ranked = rank(candidates, Profile(), {2: 40.0, 1: 0.0}, NOW)
    assert [r.story_id for r in ranked] == [2, 1]
    assert ranked[0].signals.trending == 1.0
    assert ranked[1].signals.trending == 0.0
