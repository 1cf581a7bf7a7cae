"""Measure topic classification: `newsagg eval topics --csv PATH`.

Two labelled formats: AG News (label 1-4 = World, Sports, Business, Sci/Tech; title; description) and the BBC News
dataset (doc_id, category in business/entertainment/politics/sport/tech, title, text). A dataset with fewer classes
than newsagg's eight is scored by mapping each of our topics to one of its labels and choosing the most likely of
our topics that maps somewhere (AG's World takes world and politics; Sci/Tech takes technology, science and
health; BBC's tech takes technology and science; topics a dataset has no label for are not chosen).

The headline figures are the shipped classifier's (keywords + model). The keyword baseline and the model alone are
reported beside them, and `--folds K` adds the learner trained in-domain by K-fold cross-validation on the file
itself (what a deployment could train on data of its own).
"""

from __future__ import annotations

import csv
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.topics import classifier
from app.topics.keywords import TOPICS
from app.topics.model import TopicModel

AG_LABELS = ("World", "Sports", "Business", "Sci/Tech")
AG_MAP = {"world": "World", "politics": "World", "sports": "Sports", "business": "Business",
          "technology": "Sci/Tech", "science": "Sci/Tech", "health": "Sci/Tech"}  # fmt: skip
BBC_MAP = {"politics": "politics", "business": "business", "entertainment": "entertainment", "sports": "sport",
           "technology": "tech", "science": "tech"}  # fmt: skip
TEXT_CHARS = 2000  # a long article is judged on its start, like a feed summary


@dataclass(frozen=True)
class LabelledSet:
    docs: list[tuple[str, str]]
    gold: list[str]
    labels: tuple[str, ...]
    mapping: dict[str, str]


def read_labelled_csv(path: Path) -> LabelledSet:
    csv.field_size_limit(10 * 1024 * 1024)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    columns = set(rows[0]) if rows else set()
    if {"label", "title", "description"} <= columns:
        return LabelledSet([(r["title"], r["description"].replace("\\", " ")[:TEXT_CHARS]) for r in rows],
                           [AG_LABELS[int(r["label"]) - 1] for r in rows], AG_LABELS, AG_MAP)  # fmt: skip
    if {"category", "title", "text"} <= columns:
        labels = tuple(sorted({r["category"] for r in rows}))
        return LabelledSet([(r["title"], r["text"][:TEXT_CHARS]) for r in rows], [r["category"] for r in rows],
                           labels, {t: v for t, v in BBC_MAP.items() if v in labels})  # fmt: skip
    raise ValueError(f"{path}: expected AG News columns (label, title, description) or BBC's (category, title, text)")


def choose(probabilities: np.ndarray, data: LabelledSet) -> list[str]:
    """The dataset label of the most likely of our topics that has one."""
    allowed = np.array([t in data.mapping for t in TOPICS])
    best = np.where(allowed[None, :], probabilities, -np.inf).argmax(1)
    return [data.mapping[TOPICS[i]] for i in best]


def score(gold: list[str], predicted: list[str], labels: tuple[str, ...]) -> dict[str, float]:
    pairs = list(zip(gold, predicted, strict=True))
    f1 = []
    for label in labels:
        tp = sum(1 for g, p in pairs if g == p == label)
        fp = sum(1 for g, p in pairs if p == label != g)
        fn = sum(1 for g, p in pairs if g == label != p)
        f1.append(2 * tp / max(2 * tp + fp + fn, 1))
    return {"accuracy": round(sum(1 for g, p in pairs if g == p) / max(len(pairs), 1), 4),
            "macro_f1": round(sum(f1) / len(f1), 4)}  # fmt: skip


def cross_validate(data: LabelledSet, folds: int, seed: int) -> dict[str, float]:
    """The learner trained on K-1 folds of the file and scored on the held-out one (our topics stand in for the
    dataset's labels one to one), pooled over the folds."""
    order = list(range(len(data.docs)))
    random.Random(seed).shuffle(order)
    predicted = [""] * len(order)
    names = {label: TOPICS[i] for i, label in enumerate(data.labels)}  # any distinct topic names will do
    back = {v: k for k, v in names.items()}
    for k in range(folds):
        held = set(order[k::folds])
        train = [i for i in order if i not in held]
        model = TopicModel.train([data.docs[i] for i in train], [names[data.gold[i]] for i in train],
                                 tuple(names.values()))  # fmt: skip
        test = sorted(held)
        for i, row in zip(test, model.probabilities([data.docs[i] for i in test]), strict=True):
            predicted[i] = back[model.topics[int(row.argmax())]]
    return score(data.gold, predicted, data.labels)


def evaluate(path: Path, *, folds: int = 0, seed: int = 0) -> dict[str, Any]:
    data = read_labelled_csv(path)
    started = time.perf_counter()
    keywords, learned = classifier.halves(data.docs)
    shipped = classifier.blend(keywords, learned)
    seconds = time.perf_counter() - started
    result: dict[str, Any] = {
        "rows": len(data.docs),
        "labels": list(data.labels),
        **score(data.gold, choose(shipped, data), data.labels),
        "keywords_only": score(data.gold, choose(keywords, data), data.labels),
        "model_only": score(data.gold, choose(learned, data), data.labels),
        "milliseconds_per_article": round(seconds / max(len(data.docs), 1) * 1000, 3),
    }
    if folds:
        result["in_domain_cross_validation"] = {"folds": folds, **cross_validate(data, folds, seed)}
    return result
