"""Cross-validation by story, settings chosen by it, and how separable labels are by text."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from app.stories.bcubed import bcubed
from app.stories.clustering import ClusteringPolicy
from app.stories.evaluation import LabelledArticle, read_labelled_csv, run
from app.stories.separability import separability
from app.stories.text_features import terms
from app.stories.validation import candidates, folds_of, pooled, tune
from tests.conftest import newsagg

EVENTS = {
    "fed": ["Fed's Plosser says weak data caused by weather, taper on track",
            "Plosser: Fed taper should continue despite weather-hit data",
            "Fed official Plosser sees high bar to change taper pace after weather"],
    "apple": ["Apple unveils iPhone 6 with larger screen", "Apple iPhone 6 launch: larger screen, better camera",
              "Larger screen for Apple's new iPhone 6"],
    "gox": ["Mt. Gox bitcoin exchange files for bankruptcy in Tokyo", "Bitcoin exchange Mt. Gox seeks bankruptcy",
            "Mt. Gox bankruptcy filing shakes bitcoin traders"],
    "sbarro": ["Pizza chain Sbarro files for Chapter 11 bankruptcy again", "Sbarro in Chapter 11 for second time",
               "Sbarro pizza restaurants file for bankruptcy protection"],
}  # fmt: skip


def labelled() -> list[LabelledArticle]:
    return [LabelledArticle(title, story, f"p{k}", None, language="en")
            for story, titles in EVENTS.items() for k, title in enumerate(titles)]  # fmt: skip


def test_folds_hold_whole_stories_and_pooling_keeps_their_clusters_apart() -> None:
    rows = labelled()
    folds = folds_of(rows, 2, seed=1)
    assert sorted(len({row.story for row in fold}) for fold in folds) == [2, 2]
    assert not {row.story for row in folds[0]} & {row.story for row in folds[1]}
    runs = [run(fold) for fold in folds]
    assert runs[0].predicted[0] == runs[1].predicted[0] == 1  # story ids restart in each fold...
    assert pooled(runs)["bcubed_precision"] == 1.0  # ...and still never meet


def test_tuning_chooses_what_is_precise_enough_and_best_on_the_other_folds() -> None:
    files = {"a": labelled(), "b": labelled()}
    policies = candidates(ClusteringPolicy(), {"threshold": [0.2, 0.99]})
    assert [p.threshold for p in policies] == [0.2, 0.99]
    chosen, lines = tune(files, policies, folds=2, seed=0)
    assert chosen.threshold == 0.2  # 0.99 splits every headline: precise, but no recall
    held_out = [line for line in lines if line["run"] == "cross_validated_tuned"]
    assert [(line["file"], line["order"]) for line in held_out] == [("a", "time"), ("a", "shuffled"),
                                                                      ("b", "time"), ("b", "shuffled")]  # fmt: skip
    assert all(line["chosen"] == [{"threshold": 0.2}] * 2 and line["bcubed_f1"] == 1.0 for line in held_out)
    bar = [line for line in lines if line["run"] == "operating_point"]
    assert len(bar) == 4
    assert all(line["reached"] and line["threshold"] == 0.2 for line in bar)


def test_stories_worded_alike_are_confusable_and_cap_precision() -> None:
    apart = separability([terms(row.title) for row in labelled()], [row.story for row in labelled()])
    assert (apart["oracle_f1"], apart["label_cap_precision"], apart["confusable"]) == (1.0, 1.0, [])
    twins = labelled() + [LabelledArticle(title, "gox-again", "p", None) for title in EVENTS["gox"][:2]]
    alike = separability([terms(row.title) for row in twins], [row.story for row in twins])
    assert {pair["story"] for pair in alike["confusable"]} == {"gox", "gox-again"}
    # the twins trade all their articles: a partition B-cubed finds whole, hence the accuracy
    assert alike["oracle_accuracy"] == round(9 / 14, 4)
    as_one = ["gox" if row.story == "gox-again" else row.story for row in twins]
    assert alike["label_cap_precision"] == round(bcubed(as_one, [row.story for row in twins]).precision, 4)


def test_eval_command_reports_every_file_as_json_lines(tmp_path: Path) -> None:
    paths = []
    for name in ("one", "two"):
        path = tmp_path / f"{name}.csv"
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=["TITLE", "STORY", "PUBLISHER", "TIMESTAMP"])
            writer.writeheader()
            for k, row in enumerate(labelled()):
                writer.writerow({"TITLE": row.title, "STORY": row.story, "PUBLISHER": row.publisher,
                                 "TIMESTAMP": str(1394470370698 + k * 60000)})  # fmt: skip
        paths.append(str(path))
    assert len(read_labelled_csv(Path(paths[0]))) == 12
    done = newsagg("eval", "clustering", "--csv", *paths, "--folds", "2", timeout=120, check=True)
    lines = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert [(line["file"], line["run"], line.get("order")) for line in lines] == [
        (name, run, order) for name in ("one", "two")
        for run, order in (("dev", "time"), ("dev", "shuffled"), ("cross_validated", "time"),
                           ("cross_validated", "shuffled"), ("separability", None))]  # fmt: skip
    assert all(line["languages"]["en"]["articles"] == 12 for line in lines if "languages" in line)
