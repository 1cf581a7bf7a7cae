"""Online story clustering (in-memory store) and its evaluation command."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.stories.bcubed import bcubed
from app.stories.clustering import (
    ClusteringPolicy,
    IncomingArticle,
    StoryClusterer,
    StoryState,
    signature,
    story_topics,
)
from app.stories.errors import story_errors
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


GOX = ["Mt. Gox files for bankruptcy protection in Tokyo", "Mt. Gox bankruptcy filing after bitcoin losses",
       "Gox chief apologises as exchange files for bankruptcy", "Bankrupt Gox exchange lost 850,000 bitcoins",
       "Mt. Gox bankruptcy leaves bitcoin traders stranded", "Tokyo court receives Gox bankruptcy filing"]  # fmt: skip
ELSEWHERE = [
    "Apple unveils iPhone 6 with larger screen",
    "Senators agree Fannie-Freddie overhaul",
    "Chiquita to buy Fyffes",
    "Bitcoin machine opens in London cafe",
    "Traders wary ahead of Fed meeting",
]


def test_a_word_nearly_all_in_one_story_is_its_signature_and_brings_a_weaker_match_in() -> None:
    """Given a story that holds every use of "Gox" (and bitcoin stories apart), when a headline shares the name
    but less wording than the threshold asks, then it joins the story only with the signature's evidence."""
    joined = []
    for weight in (0.0, 0.5):
        clusterer, state = StoryClusterer(ClusteringPolicy(threshold=0.4, signature_weight=weight)), StoryState()
        placed = [clusterer.assign(state, IncomingArticle(k, title, "", f"o{k}", NOW + timedelta(minutes=k)))
                  for k, title in enumerate(ELSEWHERE + GOX)]  # fmt: skip
        gox = state.stories[placed[-1]]
        assert signature(state, gox, {"gox": 1.0}, clusterer.policy) == 1.0
        assert signature(state, gox, {"bitcoin": 1.0}, clusterer.policy) == 0.0  # also the London machine's
        story = clusterer.assign(state, IncomingArticle(99, "Bitcoin traders weigh Gox claims", "", "x", NOW))
        joined.append(story == gox.id)
    assert joined == [False, True]


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


def test_error_analysis_names_split_and_merged_stories_and_their_costs_sum_to_the_loss() -> None:
    predicted = [1, 1, 2, 3, 3, 3, 3]
    gold = ["fed", "fed", "fed", "apple", "apple", "gm", "gm"]
    headlines = ["Fed a", "Fed b", "Fed c", "Apple a", "Apple b", "GM a", "GM b"]
    errors = story_errors(predicted, gold, headlines, lambda found: [f"term{found}"])
    score = bcubed(predicted, gold)
    assert [(e["story"], e["pieces"], e["singletons"], e["apart"]) for e in errors["split"]] == [
        ("fed", 2, 1, ["Fed c"])]  # fmt: skip
    assert errors["merged"][0]["terms"] == ["term3"]
    assert [(label["story"], label["articles"]) for label in errors["merged"][0]["labels"]] == [("apple", 2), ("gm", 2)]
    assert abs(sum(e["cost"] for e in errors["split"]) - (1 - score.recall)) < 1e-3
    assert abs(sum(e["cost"] for e in errors["merged"]) - (1 - score.precision)) < 1e-3


def test_eval_command_lists_errors(tmp_path: Path) -> None:
    run = newsagg("eval", "clustering", "--csv", str(write_csv(tmp_path / "labels.csv")), "--order", "shuffled",
                  "--errors", "3", timeout=60, check=True)  # fmt: skip
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert set(result["errors"]) == {"split", "merged"}
    assert result["errors"]["merged"] == []  # the two events never merge (test above)


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


def test_headlines_cut_into_character_grams_need_their_own_threshold() -> None:
    clusterer = StoryClusterer(ClusteringPolicy(threshold=0.2, gram_threshold=0.25))
    assert (clusterer.threshold("zh"), clusterer.threshold("ja"), clusterer.threshold("en")) == (0.25, 0.25, 0.2)
    assert clusterer.threshold(None) == 0.2  # unknown language: read as English
    assert StoryClusterer(ClusteringPolicy(gram_threshold=None)).threshold("zh") == ClusteringPolicy().threshold


IPHONE = ["Apple unveils iPhone 17 at Cupertino event",
          "Apple unveils iPhone 17 with thinner design at Cupertino event"]  # fmt: skip


def test_an_old_article_starts_its_own_story_rather_than_taking_over_a_current_one() -> None:
    """Given a story of this week's launch, when an article of the launch two years ago arrives (a new feed's
    backlog), then it does not join: joined, it would have been the story's earliest article and its headline."""
    clusterer, state = StoryClusterer(), StoryState()
    at = datetime(2025, 9, 10, 12, tzinfo=UTC)
    launch = {clusterer.assign(state, IncomingArticle(k, title, "", f"o{k}", at + timedelta(minutes=k)))
              for k, title in enumerate(IPHONE)}  # fmt: skip
    [story] = launch
    old = IncomingArticle(9, "Apple unveils iPhone 15 at Cupertino event", "", "o9", at - timedelta(days=730))
    assert clusterer.assign(state, old) != story
    assert state.stories[story].representative.article_id == 0
    assert state.stories[story].first_seen == at


def test_an_article_older_than_a_story_within_its_lifetime_joins_and_begins_it() -> None:
    """Given a story begun today, when an article of the same event published yesterday arrives late, then it joins
    and the story begins with it; the lifetime then counts from it: an article three days and a minute after it
    starts a story of its own."""
    clusterer, state = StoryClusterer(), StoryState()
    story = clusterer.assign(state, IncomingArticle(1, FED[0], "", "a", NOW))
    assert clusterer.assign(state, IncomingArticle(2, FED[1], "", "b", NOW - timedelta(days=1))) == story
    assert state.stories[story].first_seen == NOW - timedelta(days=1)
    assert state.stories[story].representative.article_id == 2  # the earliest, at equal authority
    late = IncomingArticle(3, FED[0], "", "c", NOW + timedelta(days=2, minutes=1))
    assert clusterer.assign(state, late) != story
