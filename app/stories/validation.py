"""Cross-validation by story, and settings chosen by it: the clusterer is tuned on some labelled stories and
measured on others, never on the stories it is scored by.

Stories (not articles) go into folds, so that no story is seen both when choosing and when measuring.
`cross_validate` clusters each fold on its own and pools the folds' runs into one B-cubed (article-weighted: a
story's clusters never meet another fold's): a fifth of the stories at a time, an easier stream than a live one.
`tune` chooses among candidate policies on every file at once, so that no one file decides, and clusters each file
whole, as a live stream holds every story at once: for each fold, the candidate best on the other folds' stories
of every file, in both orders (`choose`), is scored on that fold's stories, against whole clusters.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.stories.bcubed import BCubed, bcubed_items
from app.stories.clustering import ClusteringPolicy, article_terms
from app.stories.evaluation import LabelledArticle, Run, by_language, evaluate, run, scores
from app.stories.separability import separability

ORDERS = ("time", "shuffled")
MIN_PRECISION = 0.95  # a wrong merge costs a reader more than a split: precision first


def folds_of(rows: list[LabelledArticle], folds: int, seed: int) -> list[list[LabelledArticle]]:
    stories = sorted({row.story for row in rows})
    random.Random(seed).shuffle(stories)
    groups = [set(stories[i::folds]) for i in range(folds)]
    return [[row for row in rows if row.story in group] for group in groups]


def pooled(runs: Sequence[Run]) -> dict[str, Any]:
    """One B-cubed over several runs on disjoint stories, overall and per language."""
    predicted: list[Hashable] = [(k, found) for k, done in enumerate(runs) for found in done.predicted]
    gold = [label for done in runs for label in done.gold]
    languages = [language for done in runs for language in done.languages]
    return {**scores(predicted, gold), "stories_predicted": len(set(predicted)), "stories_labelled": len(set(gold)),
            "articles": len(gold), "languages": by_language(predicted, gold, languages)}  # fmt: skip


def cross_validate(rows: list[LabelledArticle], *, folds: int, order: str, seed: int,
                   policy: ClusteringPolicy | None = None) -> dict[str, Any]:  # fmt: skip
    """Each fold of stories clustered on its own with one policy, pooled."""
    runs = [run(group, order=order, seed=seed, policy=policy) for group in folds_of(rows, folds, seed)]
    seconds = sum(done.seconds for done in runs)
    return {**pooled(runs), "articles_per_second": round(len(rows) / seconds, 1) if seconds else None,
            "order": order, "folds": folds}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Trial:
    """One candidate policy's whole-file runs: [file][order], each article's B-cubed and the fold of its story."""

    policy: ClusteringPolicy
    items: dict[str, dict[str, list[tuple[BCubed, int]]]]

    def score(self, name: str, order: str, fold: int | None, *, held_out: bool) -> BCubed:
        """B-cubed over the articles of `fold` (held out) or of every other fold; every fold with `fold` None."""
        return _mean([item for item, k in self.items[name][order] if fold is None or (k == fold) == held_out])

    def training(self, fold: int | None) -> tuple[float, float]:
        """Mean precision and F1 over every file and order, on the stories outside `fold`."""
        found = [self.score(name, order, fold, held_out=False) for name in self.items for order in ORDERS]
        return sum(f.precision for f in found) / len(found), sum(f.f1 for f in found) / len(found)


def _mean(items: Sequence[BCubed]) -> BCubed:
    return BCubed(sum(i.precision for i in items) / len(items), sum(i.recall for i in items) / len(items))


def candidates(base: ClusteringPolicy, grid: dict[str, list[float]]) -> list[ClusteringPolicy]:
    """Every combination of the grid's values (numbers for number fields of the policy)."""
    policies = [base]
    for name, values in grid.items():
        policies = [replace(policy, **{name: value}) for policy in policies for value in values]  # type: ignore[arg-type]
    return policies


def choose(trials: Sequence[Trial], fold: int | None, min_precision: float) -> Trial:
    """Precision first, then F1: the best mean F1 among the candidates whose mean precision on the training stories
    reaches `min_precision`; where none does (labels no wording tells apart cap it, docs/clustering.md), the best
    mean F1 of all, rather than the most precise: that one is only ever the grid's strictest corner."""
    measured = [(trial.training(fold), trial) for trial in trials]
    precise = [(f1, trial) for (precision, f1), trial in measured if precision >= min_precision]
    return max(precise or [(f1, trial) for (_, f1), trial in measured], key=lambda pair: pair[0])[1]


def tune(files: dict[str, list[LabelledArticle]], policies: Sequence[ClusteringPolicy], *, folds: int, seed: int,
         min_precision: float = MIN_PRECISION) -> tuple[ClusteringPolicy, list[dict[str, Any]]]:  # fmt: skip
    """The policy chosen on every story (what to ship), and per file and order the figures of held-out stories under
    the policy chosen without them (what to expect of it on stories it was not chosen on). Each file is clustered
    whole, as a live stream holds every story at once; a fold's stories are only left out of the choosing."""
    fold_of = {name: _fold_of_each(rows, folds, seed) for name, rows in files.items()}
    trials = []
    for policy in policies:
        items: dict[str, dict[str, list[tuple[BCubed, int]]]] = {}
        for name, rows in files.items():
            for order in ORDERS:
                done = run(rows, order=order, seed=seed, policy=policy)
                folds_seen = [fold_of[name][label] for label in done.gold]
                items.setdefault(name, {})[order] = list(zip(bcubed_items(done.predicted, done.gold), folds_seen,
                                                             strict=True))  # fmt: skip
        trials.append(Trial(policy, items))
    chosen = [choose(trials, k, min_precision) for k in range(folds)]
    lines = []
    for name in files:
        for order in ORDERS:
            held_out = _mean([item for k, trial in enumerate(chosen) for item, fold in trial.items[name][order]
                              if fold == k])  # fmt: skip
            lines.append({"file": name, "run": "cross_validated_tuned", "order": order, "folds": folds,
                          "bcubed_precision": round(held_out.precision, 4), "bcubed_recall": round(held_out.recall, 4),
                          "bcubed_f1": round(held_out.f1, 4),
                          "chosen": [_settings(trial.policy, policies) for trial in chosen]})  # fmt: skip
    lines.extend(operating_point(trials, policies, min_precision))
    return choose(trials, None, min_precision).policy, lines


def operating_point(trials: Sequence[Trial], policies: Sequence[ClusteringPolicy], min_precision: float,
                    ) -> list[dict[str, Any]]:  # fmt: skip
    """Per file and order, what the bar asks of it: the best F1 of any candidate whose whole-file precision reaches
    `min_precision` (chosen on that file itself: an upper bound, not a setting to ship), or where none does, the
    most precise candidate's figures."""
    lines = []
    for name in trials[0].items:
        for order in ORDERS:
            scored = [(trial.score(name, order, None, held_out=False), trial) for trial in trials]
            precise = [pair for pair in scored if pair[0].precision >= min_precision]
            score, trial = (max(precise, key=lambda pair: pair[0].f1) if precise
                            else max(scored, key=lambda pair: pair[0].precision))  # fmt: skip
            lines.append({"file": name, "run": "operating_point", "order": order, "min_precision": min_precision,
                          "reached": bool(precise), "bcubed_precision": round(score.precision, 4),
                          "bcubed_recall": round(score.recall, 4), "bcubed_f1": round(score.f1, 4),
                          **_settings(trial.policy, policies)})  # fmt: skip
    return lines


def _fold_of_each(rows: list[LabelledArticle], folds: int, seed: int) -> dict[str, int]:
    """Each story's fold, as `folds_of` deals them."""
    return {row.story: k for k, group in enumerate(folds_of(rows, folds, seed)) for row in group}


def _settings(policy: ClusteringPolicy, policies: Sequence[ClusteringPolicy]) -> dict[str, Any]:
    """What sets a candidate apart from the others."""
    first = policies[0]
    varied = [name for name in ClusteringPolicy.__dataclass_fields__
              if any(getattr(other, name) != getattr(first, name) for other in policies)]  # fmt: skip
    return {name: getattr(policy, name) for name in varied}


def report(files: dict[str, list[LabelledArticle]], policy: ClusteringPolicy, *, folds: int, seed: int,
           grid: dict[str, list[float]] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The figures a change to the clusterer is judged by, one line each: per file, the whole file in both orders
    and cross-validated by story, overall and per language, and how separable its labels are by text
    (app/stories/separability.py); with a `grid`, the settings chosen by cross-validation and their held-out
    figures, the whole-file lines then being the chosen settings'."""
    lines: list[dict[str, Any]] = []
    if grid:
        policies = candidates(policy, grid)
        policy, tuned = tune(files, policies, folds=folds, seed=seed)
        lines.append({"run": "chosen", **_settings(policy, policies)})
        lines.extend(tuned)
    for name, rows in files.items():
        for order in ORDERS:
            lines.append({"file": name, "run": "dev", **evaluate(rows, order=order, seed=seed, policy=policy)})
        for order in ORDERS:
            lines.append({"file": name, "run": "cross_validated",
                          **cross_validate(rows, folds=folds, order=order, seed=seed, policy=policy)})  # fmt: skip
        vectors = [article_terms(row.title, row.summary, row.language) for row in rows]
        lines.append({"file": name, "run": "separability", **separability(vectors, [row.story for row in rows])})
    return lines
