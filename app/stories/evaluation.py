"""Measure story clustering on labelled headlines: B-cubed against the labels, and speed.

CSV formats: the UCI News Aggregator columns (TITLE, STORY, PUBLISHER, TIMESTAMP in ms; optional SUMMARY or TEXT,
and LANGUAGE), or WikiRef220's (file, topic, title, text). Without a LANGUAGE column each article's language is
detected as at ingest. `time` replays articles in timestamp order; `shuffled` interleaves
every story at random, all within one window: harder, and closer to a live firehose.
"""

from __future__ import annotations

import csv
import random
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from app.articles.language import article_language
from app.stories.bcubed import bcubed
from app.stories.clustering import ClusteringPolicy, IncomingArticle, StoryClusterer, StoryState, top_terms
from app.stories.errors import story_errors

SUMMARY_CHARS = 1000
ERROR_TERMS = 8  # a merged story's strongest terms shown in the error analysis
UNKNOWN = "unknown"  # the language of an article too short to tell (clustered as English)


@dataclass(frozen=True, slots=True)
class LabelledArticle:
    title: str
    story: str
    publisher: str
    at: datetime | None
    summary: str = ""
    language: str | None = None


def read_labelled_csv(path: Path) -> list[LabelledArticle]:
    csv.field_size_limit(10 * 1024 * 1024)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if rows and "STORY" in rows[0]:
        return [LabelledArticle(title=r["TITLE"], story=r["STORY"], publisher=r.get("PUBLISHER") or "",
                                at=_from_ms(r.get("TIMESTAMP")), summary=_summary(r),
                                language=r.get("LANGUAGE") or _detected(r["TITLE"], _summary(r)))
                for r in rows]  # fmt: skip
    if rows and {"topic", "title", "text"} <= set(rows[0]):
        return [LabelledArticle(title=r["title"], story=r["topic"], publisher=r.get("file") or "", at=None,
                                summary=r["text"][:SUMMARY_CHARS], language=_detected(r["title"], r["text"]))
                for r in rows]  # fmt: skip
    raise ValueError(f"{path}: expected columns TITLE, STORY, PUBLISHER, TIMESTAMP (or file, topic, title, text)")


def _detected(title: str, summary: str) -> str | None:
    """The language as ingest finds it (no source declares one here)."""
    return article_language(title, summary[:SUMMARY_CHARS], None)


def _summary(row: dict[str, str]) -> str:
    return (row.get("SUMMARY") or row.get("TEXT") or "")[:SUMMARY_CHARS]


def _from_ms(value: str | None) -> datetime | None:
    return datetime.fromtimestamp(int(value) / 1000, tz=UTC) if value and value.isdigit() else None


def arrival_order(rows: list[LabelledArticle], order: str, seed: int) -> list[tuple[LabelledArticle, datetime]]:
    """Articles with the time each arrives at."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    if order == "time":
        ordered = sorted(enumerate(rows), key=lambda pair: (pair[1].at or start, pair[0]))
        return [(row, row.at or start + timedelta(seconds=i)) for i, (_, row) in enumerate(ordered)]
    if order == "shuffled":
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        return [(row, start + timedelta(seconds=i)) for i, row in enumerate(shuffled)]
    raise ValueError("order is `time` or `shuffled`")


@dataclass
class Run:
    """One clustering run over labelled rows: each article's story as found and as labelled, in arrival order."""

    predicted: list[Hashable]
    gold: list[str]
    languages: list[str]
    headlines: list[str]
    seconds: float
    state: StoryState


def run(rows: list[LabelledArticle], *, order: str = "time", seed: int = 0, policy: ClusteringPolicy | None = None,
        ) -> Run:  # fmt: skip
    clusterer = StoryClusterer(policy)
    state = StoryState()
    arrivals = arrival_order(rows, order, seed)
    started = time.perf_counter()
    articles = [IncomingArticle(id=index + 1, title=row.title, summary=row.summary, source=row.publisher, at=at,
                                language=row.language) for index, (row, at) in enumerate(arrivals)]  # fmt: skip
    placed = clusterer.assign_all(state, articles)
    if arrivals:
        clusterer.merge_pass(state, arrivals[-1][1])
    predicted: list[Hashable] = [state.resolve(placed[article.id]) for article in articles]
    return Run(predicted, [row.story for row, _ in arrivals], [row.language or UNKNOWN for row, _ in arrivals],
               [row.title for row, _ in arrivals], time.perf_counter() - started, state)  # fmt: skip


def scores(predicted: Sequence[Hashable], gold: Sequence[str]) -> dict[str, float]:
    score = bcubed(predicted, gold)
    return {"bcubed_precision": round(score.precision, 4), "bcubed_recall": round(score.recall, 4),
            "bcubed_f1": round(score.f1, 4)}  # fmt: skip


def evaluate(
    rows: list[LabelledArticle],
    *,
    order: str = "time",
    seed: int = 0,
    policy: ClusteringPolicy | None = None,
    errors: int = 0,
) -> dict[str, Any]:
    """B-cubed of one run over all the rows, overall and per language; with `errors`, that many of the costliest
    splits and merges (app/stories/errors.py)."""
    done = run(rows, order=order, seed=seed, policy=policy)
    result: dict[str, Any] = {
        **scores(done.predicted, done.gold),
        "stories_predicted": len(set(done.predicted)),
        "stories_labelled": len(set(done.gold)),
        "articles": len(rows),
        "articles_per_second": round(len(rows) / done.seconds, 1) if done.seconds else None,
        "order": order,
        "languages": by_language(done.predicted, done.gold, done.languages),
    }
    if errors:
        state = done.state
        result["errors"] = story_errors(done.predicted, done.gold, done.headlines,
                                        lambda found: _strongest(state, found), top=errors)  # fmt: skip
    return result


def _strongest(state: StoryState, story_id: Hashable) -> list[str]:
    story = state.stories.get(story_id) if isinstance(story_id, int) else None
    return top_terms(story.centroid, ERROR_TERMS) if story else []


def by_language(predicted: Sequence[Hashable], gold: Sequence[str], languages: Sequence[str],
                ) -> dict[str, dict[str, float]]:  # fmt: skip
    """B-cubed among each language's articles (as detected): stories are cut to the articles of that language."""
    result = {}
    for language in sorted(set(languages)):
        chosen = [i for i, found in enumerate(languages) if found == language]
        score = scores([predicted[i] for i in chosen], [gold[i] for i in chosen])
        result[language] = {"articles": len(chosen), **score}
    return result
