"""The clusterer's caches and shortcuts give exactly what the plain computation gives, on real headlines in English
and Chinese (the labelled story files of the shared data) and on headlines in other languages and scripts."""

from __future__ import annotations

import csv
import functools
import heapq
import math
from collections import defaultdict
from pathlib import Path

import pytest

from app.entities import extractor, phrases
from app.stories import text_features
from app.stories.clustering import TOP_TERMS, ClusteringPolicy, Story, StoryClusterer, StoryState, article_terms
from app.stories.text_features import MIN_SUMMARY_WORD, MIN_TITLE_WORD, NAME_WEIGHT, SUMMARY_WEIGHT, terms
from app.text import word_forms
from app.text.segments import segments

OTHER_LANGUAGES = [
    ("Élections municipales : l'armée déployée à Marseille après des violences", "fr"),
    ("Bundesregierung beschließt Klimapaket: Merkel verteidigt CO2-Preis", "de"),
    ("Путин и Си Цзиньпин обсудили ситуацию на Украине", "ru"),
    ("ΕΚΛΟΓΕΣ: Ο Μητσοτάκης κέρδισε στην Αθήνα", "el"),  # noqa: RUF001
    ("東京オリンピック、延期が正式に決定　IOCが発表", "ja"),
    ("윤석열 대통령, 바이든과 정상회담", "ko"),
    ("นายกรัฐมนตรีประกาศมาตรการใหม่", "th"),
    ("Thủ tướng Phạm Minh Chính gặp Tổng thống Biden", "vi"),
    ("Dell'Europa e dell'Italia: Draghi al vertice di Bruxelles", "it"),
    ("Fannie-Freddie overhaul: F-15C and COVID-19 in O'Brien's Mt. Gox report", "en"),
]


@functools.cache
def headlines(shared: Path) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = list(OTHER_LANGUAGES)
    for name, language in (("uci_news_aggregator_dev.csv", "en"), ("ecob_en_dev.csv", "en"), ("ecob_zh_dev.csv", "zh")):
        with (shared / "stories" / name).open(encoding="utf-8", newline="") as handle:
            found += [(row["TITLE"], language) for row in csv.DictReader(handle)]
    return found


def plain_terms(title: str, summary: str, language: str | None) -> dict[str, float]:
    """`terms` as computed before its per-word cache: every part formed again, with an uncached word form."""
    language = language or text_features.DEFAULT_LANGUAGE
    stop, form = word_forms.stopwords(language), word_forms.word_form.__wrapped__
    counts: dict[str, float] = defaultdict(float)
    for index, (kind, raw) in enumerate(segments(title)):
        if kind == "gram":
            if raw not in stop:
                counts[raw] += 1.0
        else:
            weight = NAME_WEIGHT if index > 0 and raw[:1].isupper() else 1.0
            for part in text_features._parts(raw):
                if len(word := form(part, language)) >= MIN_TITLE_WORD:
                    counts[word] += weight
    for kind, raw in segments(summary):
        if kind == "gram":
            if raw not in stop:
                counts[raw] += SUMMARY_WEIGHT
        else:
            for part in text_features._parts(raw):
                if len(word := form(part, language)) >= MIN_SUMMARY_WORD:
                    counts[word] += SUMMARY_WEIGHT
    return dict(counts)


def test_cached_word_forms_give_the_plain_terms(shared_data: Path) -> None:
    text_features._forms.cache_clear()
    rows = headlines(shared_data)
    assert len(rows) > 3000
    summary = "Officials said the talks would resume; l'accord reste fragile, Merkel-Macron split over F-15C jets"
    for cold_then_warm in range(2):  # the first pass fills the cache, the second reads it
        for title, language in rows:
            assert terms(title, summary, language) == plain_terms(title, summary, language), (title, cold_then_warm)
    assert text_features._forms.cache_info().hits > 0


def test_cached_capitalisation_and_stop_words_give_the_plain_entities(shared_data: Path) -> None:
    for title, language in headlines(shared_data)[:1500]:
        for word in title.split():
            assert phrases.capitalised(word) == phrases.capitalised.__wrapped__(word)
        assert extractor._stopwords(language) == extractor._stopwords.__wrapped__(language)
        assert list(extractor.extract_uncached(title, "", language)) == extractor.extract(title, "", language)


def test_idf_in_one_pass_is_the_idf_of_each_word(shared_data: Path) -> None:
    state = StoryState()
    for title, language in headlines(shared_data)[:800]:
        state.observe(article_terms(title, "", language))
    words = list(article_terms("Fed's Plosser says weak data caused by weather, taper on track", "", "en"))
    assert state.idfs(words) == {w: state.idf(w) for w in words}
    assert list(state.idfs(words)) == words


def test_lookup_takes_the_terms_heapq_takes(shared_data: Path) -> None:
    """One stable sort chooses what two `heapq.nlargest` chose, ties in the article's term order included."""
    clusterer, policy = StoryClusterer(), ClusteringPolicy()
    state = StoryState()
    for title, language in headlines(shared_data)[:1200]:
        counts = article_terms(title, "", language)
        state.observe(counts)
        idf = state.idfs(counts)
        index = {w: {1} for i, w in enumerate(idf) if i % 2}  # half of the terms are some story's
        rarest = heapq.nlargest(policy.candidate_terms, idf, key=idf.__getitem__)
        significant = sum(1 for w in rarest if idf[w] >= policy.significant_idf)
        indexed = heapq.nlargest(policy.candidate_terms, (w for w in idf if w in index), key=idf.__getitem__)
        assert clusterer.lookup(idf, index) == (indexed, max(min(policy.min_shared, significant), 1)), title


@pytest.mark.parametrize("size", [1, TOP_TERMS - 1, TOP_TERMS, TOP_TERMS + 1, 3 * TOP_TERMS])
def test_a_small_story_is_indexed_by_the_terms_ranking_picks(size: int) -> None:
    from datetime import UTC, datetime

    from app.stories.clustering import Representative, top_terms

    now = datetime(2026, 3, 1, tzinfo=UTC)
    state = StoryState()
    story = Story(1, {}, 0.0, 1, {"1"}, now, now, Representative(1, "t", 0.5, now))
    state.stories[1] = story
    weights = {f"w{i}": 1.0 + (i % 7) / 4 for i in range(size)}  # ties among the weights
    state.add_weights(story, weights)
    assert story.top == set(top_terms(story.centroid))
    assert story.floor == min(story.centroid[w] for w in story.top)
    assert {w for w, ids in state.index.items() if 1 in ids} == story.top
    assert math.isclose(story.norm, math.sqrt(sum((c * state.idf(w)) ** 2 for w, c in story.centroid.items())))
