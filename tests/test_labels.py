"""Language and topic labels: the detector's policy, the shipped topic classifier, and their eval commands."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from app.articles.labels import label
from app.articles.language import article_language, detect, normalize
from app.topics.classifier import shipped_model, topics_of
from app.topics.evaluation import evaluate as evaluate_topics
from app.topics.features import featurize
from app.topics.model import TopicModel
from tests.conftest import newsagg


def test_languages_of_headlines() -> None:
    assert article_language("Le gouvernement annonce une réforme des retraites", "", None) == "fr"
    assert article_language("Die Regierung plant neue Steuern für große Unternehmen", "", None) == "de"
    assert article_language("Apple unveils a larger iPhone with a better camera", "", None) == "en"
    assert article_language("東京都は新しい感染対策を発表し、飲食店に営業時間の短縮を要請した", "", None) == "ja"


def test_too_little_text_falls_back_to_the_declared_language() -> None:
    assert detect("Brexit") is None
    assert article_language("Brexit", "", "en-GB") == "en"
    assert article_language("Brexit", "", None) is None
    assert article_language("", "", "fil") == "tl"
    assert normalize("EN_us") == "en"


def test_topics_of_plain_headlines() -> None:
    found = topics_of([
        ("Manchester United beat Chelsea 2-0 to reach the cup final", ""),
        ("Stocks tumble as the Fed raises interest rates again", ""),
        ("Senate passes the budget bill after a late-night vote", ""),
        ("Oscar-winning actress to star in a new Netflix drama series", ""),
    ])  # fmt: skip
    assert [topics[0] for topics in found] == ["sports", "business", "politics", "entertainment"]
    assert all(1 <= len(topics) <= 2 for topics in found)


def test_labels_keep_order_and_survive_empty_text() -> None:
    found = label([("", "", None), ("Apple unveils a larger iPhone with a better camera", "", "fr"), ("", "", "de")])
    assert [f.language for f in found] == [None, "en", "de"]
    assert [f.topics[:1] for f in found] == [[], ["technology"], []]  # no text: unknown, not a default topic


def test_an_article_in_a_language_the_classifier_does_not_read_has_no_topic() -> None:
    """Given the same sports headline in English and in French, when labelled, then only the English one has a
    topic: the French one is unknown (an empty list), not the English model's guess."""
    found = label([("Manchester United beat Chelsea 2-0 to reach the cup final", "", None),
                   ("Manchester United bat Chelsea 2-0 et se qualifie pour la finale de la coupe", "", None),
                   ("Brexit", "", "en-GB"), ("Brexit", "", None)])  # fmt: skip
    assert [f.language for f in found] == ["en", "fr", "en", None]
    assert [f.topics[:1] for f in found] == [["sports"], [], ["politics"], ["politics"]]
    assert topics_of([("Stocks tumble as the Fed raises interest rates", "")] * 3, ["en", "tl", None]) == [
        ["business"],
        [],
        ["business"],
    ]


def write_ag(path: Path) -> Path:
    rows = [
        (2, "Lakers beat Celtics in overtime thriller", "LeBron scored 40 points as the Lakers won the game."),
        (3, "Oil prices climb as OPEC cuts output", "Crude rose 3 percent; investors expect higher profits."),
        (4, "Microsoft releases new Windows security patch", "The software update fixes a virus attack on users."),
        (1, "Troops withdraw from border after ceasefire", "The army and rebels agreed to a UN-brokered truce."),
    ]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["label", "title", "description"])
        writer.writerows(rows * 3)
    return path


def test_topic_eval_scores_the_shipped_classifier(tmp_path: Path) -> None:
    result = evaluate_topics(write_ag(tmp_path / "ag.csv"), folds=3)
    assert result["rows"] == 12
    assert result["labels"] == ["World", "Sports", "Business", "Sci/Tech"]
    assert result["accuracy"] == 1.0
    assert set(result["keywords_only"]) == set(result["model_only"]) == {"accuracy", "macro_f1"}
    assert 0.0 <= result["in_domain_cross_validation"]["accuracy"] <= 1.0


def test_eval_commands_print_json_last(tmp_path: Path) -> None:
    run = newsagg("eval", "topics", "--csv", str(write_ag(tmp_path / "ag.csv")), check=True)
    assert {"accuracy", "macro_f1"} <= set(json.loads(run.stdout.strip().splitlines()[-1]))
    sentences = tmp_path / "sentences.tsv"
    sentences.write_text(
        "en\tThe government announced a new plan to cut taxes for small firms across the country\n"
        "fr\tLe gouvernement a annoncé un nouveau plan pour réduire les impôts des petites entreprises\n"
        "xx\tnot a language newsagg detects\n"
    )
    run = newsagg("eval", "languages", "--tsv", str(sentences), check=True)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert (result["snippets"], result["languages"], result["accuracy"]) == (2, 2, 1.0)


def test_a_csv_of_another_shape_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    run = newsagg("eval", "topics", "--csv", str(path))
    assert run.returncode != 0
    assert "expected AG News columns" in run.stderr


def test_the_topic_model_round_trips_and_refuses_a_foreign_file(tmp_path: Path) -> None:
    rows = [("Lakers win the title", "basketball"), ("Shares fall on Wall Street", "markets")] * 5
    model = TopicModel.train(rows, ["sports", "business"] * 5, ("sports", "business"), epochs=30)
    model.save(tmp_path / "m.npz")
    again = TopicModel.load(tmp_path / "m.npz")
    assert again.probabilities([("Lakers win again", "")]).argmax() == 0
    (tmp_path / "bad.npz").write_bytes(b"not a model")
    with pytest.raises(ValueError):
        TopicModel.load(tmp_path / "bad.npz")
    with np.load(tmp_path / "m.npz") as stored:
        arrays = {name: stored[name] for name in stored.files}
    meta = json.loads(str(arrays["meta"]))
    np.savez(tmp_path / "words.npz", **{**arrays, "meta": np.array(json.dumps({**meta, "version": 1}))})
    with pytest.raises(ValueError, match="train it again"):
        TopicModel.load(tmp_path / "words.npz")  # unstemmed words: its weights would land on the wrong features


def test_shipped_topics_on_the_labelled_dev_sets(shared_data: Path) -> None:
    """A floor under the shipped classifier on the dev files (measured: AG 0.822, BBC 0.926; the keyword baseline
    0.758 and 0.908)."""
    ag = evaluate_topics(shared_data / "topics" / "ag_news_dev.csv")
    bbc = evaluate_topics(shared_data / "topics" / "bbc_news_dev.csv")
    assert ag["accuracy"] >= 0.81
    assert bbc["accuracy"] >= 0.915
    assert ag["accuracy"] > ag["keywords_only"]["accuracy"]
    assert bbc["accuracy"] > bbc["keywords_only"]["accuracy"]


HEADLINES = [  # (declared language, title, the topic an English reader would give it)
    (None, "Manchester United beat Chelsea 2-0 to reach the FA Cup final", "sports"),
    (None, "Stocks tumble on Wall Street as the Fed raises interest rates again", "business"),
    (None, "Apple unveils a new iPhone with a faster chip and a better camera", "technology"),
    (None, "Senate passes the budget bill after a late-night vote on spending", "politics"),
    (None, "Taylor Swift announces a world tour and a new album", "entertainment"),
    (None, "Le PSG bat Marseille et prend la tête du championnat de France", "sports"),
    (None, "La Bourse de Paris recule après la hausse des taux de la Banque centrale européenne", "business"),
    (None, "Der FC Bayern München gewinnt das Spitzenspiel gegen Borussia Dortmund", "sports"),
    (None, "Der Dax schließt nach dem Zinsentscheid der Europäischen Zentralbank im Minus", "business"),
    (None, "El Real Madrid vence al Barcelona y se acerca al título de liga", "sports"),
    (None, "La bolsa española cae tras la subida de los tipos de interés del Banco Central Europeo", "business"),
    ("fil", "Gilas Pilipinas, tinalo ang Jordan sa FIBA World Cup qualifiers", "sports"),
    ("fil", "Presyo ng bigas at gulay, tumaas ngayong linggo ayon sa DA", "business"),
]


def test_the_shipped_model_reads_english_headlines_and_leaves_other_languages_unknown() -> None:
    """Given real-looking headlines in English, French, German, Spanish and Tagalog, when labelled, then each English
    one gets its topic first and every other one has no topic (unknown), not the English model's guess.

    Why no guess: the model's weights are for English word stems, and it knows few of the words of the others (below:
    the share of each headline's words that have a weight), so its answer rests on a name or two: asked anyway, it gets
    the sports headlines (club names) and none of the business ones. Measured on 80 Tagalog headlines
    (app/topics/classifier.py), its first topic was right for 15."""
    found = label([(title, "", declared) for declared, title, _ in HEADLINES])
    english = [i for i, f in enumerate(found) if f.language == "en"]
    assert english == [0, 1, 2, 3, 4]
    assert [found[i].topics[0] for i in english] == [HEADLINES[i][2] for i in english]
    assert [f.language for f in found[5:]] == ["fr", "fr", "de", "de", "es", "es", "tl", "tl"]
    assert all(f.topics == [] for f in found[5:])

    model = shipped_model()
    known = []
    for _, title, _ in HEADLINES:
        batch = featurize([(title, "")])
        known.append(float(np.mean(np.isin(batch.columns, model.columns))))
    assert min(known[:5]) >= 0.6  # most English words carry a weight
    assert max(known[5:]) < min(known[:5])
    assert float(np.mean(known[5:])) <= 0.5
    guesses = topics_of([(title, "") for _, title, _ in HEADLINES[5:]], ["en"] * 8)  # pretending they were English
    right = [guess[0] == topic for guess, (_, _, topic) in zip(guesses, HEADLINES[5:], strict=True)]
    assert sum(right) <= 4
    assert not any(r for r, (_, _, topic) in zip(right, HEADLINES[5:], strict=True) if topic == "business")
