"""`newsagg eval` and `newsagg topics train`: the understanding of the news measured on labelled data, and trained."""

from __future__ import annotations

import argparse
import sys

REPORT_FOLDS = 5


def evaluate(args: argparse.Namespace) -> int:
    import json

    result: dict[str, object]
    if args.eval_command == "topics":
        from app.topics.evaluation import evaluate as evaluate_topics

        result = evaluate_topics(args.csv, folds=args.folds, seed=args.seed)
    elif args.eval_command == "entities":
        from app.entities.evaluation import evaluate as evaluate_entities

        result = evaluate_entities(args.jsonl)
    elif args.eval_command == "languages":
        from app.articles.language_eval import evaluate as evaluate_languages

        result = evaluate_languages(args.tsv, args.english)
    elif args.eval_command == "extraction":
        from app.extraction.evaluation import evaluate as evaluate_extraction

        result = evaluate_extraction(args.dir, compare=args.compare)
    else:
        for line in clustering(args):
            print(json.dumps(line))
        return 0
    print(json.dumps(result))
    return 0


def clustering(args: argparse.Namespace) -> list[dict[str, object]]:
    """One JSON line; with --report (or several files, or --tune), the report's lines (app/stories/validation.py)."""
    import dataclasses

    from app.stories.clustering import ClusteringPolicy
    from app.stories.evaluation import evaluate, read_labelled_csv
    from app.stories.validation import cross_validate, report

    policy = ClusteringPolicy()
    overrides = {"threshold": args.threshold, "min_shared": args.min_shared}
    policy = dataclasses.replace(policy, **{k: v for k, v in overrides.items() if v is not None})
    files = {path.stem: read_labelled_csv(path) for path in args.csv}
    if args.report or args.tune or len(files) > 1:
        grid = dict(_grid(setting) for setting in args.tune or [])
        return report(files, policy, folds=args.folds or REPORT_FOLDS, seed=args.seed, grid=grid)
    [rows] = files.values()
    if args.folds:
        return [cross_validate(rows, folds=args.folds, order=args.order, seed=args.seed, policy=policy)]
    return [evaluate(rows, order=args.order, seed=args.seed, policy=policy, errors=args.errors)]


def _grid(setting: str) -> tuple[str, list[float]]:
    """`threshold=0.2,0.25`: a clustering policy field and the values to try."""
    from app.stories.clustering import ClusteringPolicy

    name, _, values = setting.partition("=")
    default = getattr(ClusteringPolicy(), name, "")  # a number, or None for a number that defaults to another
    if not (default is None or isinstance(default, int | float)) or not values:
        raise SystemExit(f"--tune {setting}: expected FIELD=V1,V2,... with a number field of ClusteringPolicy")
    kind = int if isinstance(default, int) else float
    return name, [kind(value) for value in values.split(",")]


def train_topics(args: argparse.Namespace) -> int:
    import collections
    import time

    from app.topics.classifier import train
    from app.topics.weak_labels import load_weakly_labelled

    rows = load_weakly_labelled(args.items)
    print(f"{len(rows)} items labelled by section: {dict(collections.Counter(r[2] for r in rows))}", file=sys.stderr)
    started = time.perf_counter()
    model = train(rows, keep=args.keep)
    model.save(args.out)
    print(f"trained in {time.perf_counter() - started:.0f} s; {len(model.columns)} hashed words -> {args.out}",
          file=sys.stderr)  # fmt: skip
    return 0
