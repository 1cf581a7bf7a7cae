"""`newsagg eval` and `newsagg topics train`: the understanding of the news measured on labelled data, and trained."""

from __future__ import annotations

import argparse
import sys


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
        result = clustering(args)
    print(json.dumps(result))
    return 0


def clustering(args: argparse.Namespace) -> dict[str, object]:
    import dataclasses

    from app.stories.clustering import ClusteringPolicy
    from app.stories.evaluation import cross_validate, evaluate, read_labelled_csv

    policy = ClusteringPolicy()
    overrides = {"threshold": args.threshold, "min_shared": args.min_shared}
    policy = dataclasses.replace(policy, **{k: v for k, v in overrides.items() if v is not None})
    rows = read_labelled_csv(args.csv)
    if args.folds:
        return cross_validate(rows, folds=args.folds, order=args.order, seed=args.seed, policy=policy)
    return evaluate(rows, order=args.order, seed=args.seed, policy=policy, errors=args.errors)


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
