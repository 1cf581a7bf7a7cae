"""Online story clustering (in-memory store) and its evaluation command."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.stories.clustering import IncomingArticle, StoryClusterer, StoryState, story_topics
from app.stories.evaluation import evaluate, read_labelled_csv
from app.stories.text_features import terms
from app.stories.velocity import measure
from tests.conftest import newsagg

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)
FED = ["Fed's Plosser says weak data caused by weather, taper on track",
       "Plosser: Fed taper should continue despite weather-hit data",
       "Fed official Plosser sees high bar to change taper pace after weather"]  # fmt: skip
APPLE = ["Apple unveils iPhone 6 with larger screen", "Apple iPhone 6 launch: larger screen, better camera",
         "Larger screen for Apple's new iPhone 6"]  # fmt: skip


def test_terms_drop_stopwords_stem_and_weigh_names() -> None:
    weights = terms("The Fed says Plosser's taper continues")
    assert weights == {"fed": 2.0, "plosser": 2.0, "taper": 1.0, "continu": 1.0}
    assert terms("The Fed says Plosser's taper continues", language="en") == weights  # unknown language: English


def test_headlines_of_one_event_join_and_others_do_not() -> None:
    clusterer, state = StoryClusterer(), StoryState()
    stories = []
    for index, title in enumerate([FED[0], APPLE[0], FED[1], APPLE[1], APPLE[2]]):
        at = NOW + timedelta(minutes=index)
        stories.append(clusterer.assign(state, IncomingArticle(index, title, "", f"outlet{index}", at)))
    fed, apple = {stories[0], stories[2]}, {stories[1], stories[3], stories[4]}
    assert len(fed) == 1
    assert len(apple) == 1
    assert fed != apple


def test_a_paraphrase_of_the_event_joins_it() -> None:
    clusterer, state = StoryClusterer(), StoryState()
    interleaved = [FED[0], APPLE[0], FED[1], APPLE[1], FED[2]]
    stories = [clusterer.assign(state, IncomingArticle(k, t, "", f"o{k}", NOW)) for k, t in enumerate(interleaved)]
    assert stories[0] == stories[2] == stories[4]


def test_stories_older_than_the_window_are_frozen() -> None:
    clusterer, state = StoryClusterer(), StoryState()
    first = clusterer.assign(state, IncomingArticle(1, FED[0], "", "a", NOW))
    later = clusterer.assign(state, IncomingArticle(2, FED[1], "", "b", NOW + timedelta(hours=49)))
    assert first != later


def test_a_story_takes_its_topics_from_the_articles_that_have_one() -> None:
    state = StoryState()
    story = state.create(IncomingArticle(0, FED[0], "", "wire", NOW, topics=("business",), language="en"), {"fed": 1})
    for k in range(1, 4):  # German reports of it: no topic (the topic classifier reads English only)
        state.join(story, IncomingArticle(k, FED[0], "", f"de{k}", NOW, language="de"), {"fed": 1.0})
    assert story_topics(story) == ["business"]
    for k in range(4, 8):  # a second topic on one of five articles with one is not enough
        topics = ("business", "world") if k == 4 else ("business",)
        state.join(story, IncomingArticle(k, FED[0], "", f"en{k}", NOW, topics=topics, language="en"), {"fed": 1.0})
    assert story_topics(story) == ["business"]


def write_csv(path: Path) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["TITLE", "STORY", "PUBLISHER", "TIMESTAMP"])
        writer.writeheader()
        for index, (titles, story) in enumerate([(FED[:2], "fed"), (APPLE, "apple")]):
            for k, title in enumerate(titles):
                writer.writerow({"TITLE": title, "STORY": story, "PUBLISHER": f"p{k}",
                                 "TIMESTAMP": str(1394470370698 + (index * 3 + k) * 60000)})  # fmt: skip
    return path


def test_evaluation_never_merges_the_two_events(tmp_path: Path) -> None:
    rows = read_labelled_csv(write_csv(tmp_path / "labels.csv"))
    for order, seed in (("time", 0), ("shuffled", 1), ("shuffled", 2)):
        result = evaluate(rows, order=order, seed=seed)
        assert result["bcubed_precision"] == 1.0
        assert 2 <= result["stories_predicted"] <= 5
        assert result["articles"] == 5


def test_eval_command_prints_json_last(tmp_path: Path) -> None:
    csv_path = write_csv(tmp_path / "labels.csv")
    run = newsagg("eval", "clustering", "--csv", str(csv_path), timeout=60, check=True)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert set(result) >= {"bcubed_precision", "bcubed_recall", "bcubed_f1", "stories_predicted",
                           "articles_per_second"}  # fmt: skip


def test_evaluation_reports_each_language(tmp_path: Path) -> None:
    """A LANGUAGE column is read as given; without one, each headline's language is detected as at ingest."""
    path = tmp_path / "mixed.csv"
    events = [("台风山竹登陆广东 数十万人紧急转移", "typhoon", "zh"),
              ("超强台风山竹登陆广东 紧急转移数十万群众", "typhoon", "zh"),
              ("Банк России повысил ключевую ставку", "rates", "ru"),
              ("Банк России поднял ключевую ставку до 16%", "rates", "ru"),
              ("上海股市周一收盘上涨 科技股领涨", "shanghai", "zh")]  # fmt: skip
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["TITLE", "STORY", "PUBLISHER", "TIMESTAMP", "LANGUAGE"])
        writer.writeheader()
        for k, (title, story, language) in enumerate(events):
            writer.writerow({"TITLE": title, "STORY": story, "PUBLISHER": f"p{k}", "TIMESTAMP": str(1394470370698 + k),
                             "LANGUAGE": language})  # fmt: skip
    result = evaluate(read_labelled_csv(path))
    assert result["bcubed_f1"] == 1.0
    assert result["languages"] == {
        "ru": {"articles": 2, "bcubed_precision": 1.0, "bcubed_recall": 1.0, "bcubed_f1": 1.0},
        "zh": {"articles": 3, "bcubed_precision": 1.0, "bcubed_recall": 1.0, "bcubed_f1": 1.0},
    }
    detected = evaluate(read_labelled_csv(write_csv(tmp_path / "labels.csv")))
    assert set(detected["languages"]) == {"en"}


def test_velocity_counts_recent_arrivals_and_breaking_cools_down() -> None:
    state = StoryState()
    story = state.create(IncomingArticle(0, FED[0], "", "outlet0", NOW), {"fed": 1.0})
    for k in range(1, 70):
        state.join(story, IncomingArticle(k, FED[0], "", f"outlet{k % 6}", NOW + timedelta(seconds=k)), {"fed": 1.0})
    assert measure(story, NOW + timedelta(minutes=2))  # 70 arrivals in 30 minutes from 6 outlets
    assert story.velocity == 70 / 30
    assert not measure(story, NOW + timedelta(minutes=3))  # still breaking: not a new transition
    assert not measure(story, NOW + timedelta(minutes=40))  # no arrivals left in the window
    assert (story.velocity, story.is_breaking, story.breaking_started_at) == (0.0, False, NOW + timedelta(minutes=2))


def test_many_articles_from_few_outlets_are_not_breaking() -> None:
    state = StoryState()
    story = state.create(IncomingArticle(0, FED[0], "", "a", NOW), {"fed": 1.0})
    for k in range(1, 100):
        state.join(story, IncomingArticle(k, FED[0], "", "ab"[k % 2], NOW), {"fed": 1.0})
    assert not measure(story, NOW)
    assert story.velocity > 3
