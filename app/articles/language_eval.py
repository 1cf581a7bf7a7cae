"""Measure language detection: `newsagg eval languages`.

Labelled sentences come as `language<TAB>sentence` lines. By default they are the multilingual test set shipped in
the `eld` package (installed with newsagg's `eval`/`dev` extras; Apache-2.0): headline-length snippets of 5-20
words are cut from each sentence of the languages newsagg detects, so the figures speak for headlines, not for
paragraphs. `--english` adds English headlines (any CSV with a TITLE or title column): how many are called English,
and how many are confidently called something else (the error a reader sees).
"""

from __future__ import annotations

import csv
import random
import time
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

from app.articles.language import LANGUAGES, MIN_CONFIDENCE, detect

SHORT_WORDS = 8  # snippets this short are reported on their own: the hard case
PER_LANGUAGE = 200
UNSPACED = {"zh": 1.6, "ja": 2.0, "th": 4.0}  # characters per "word" in scripts written without spaces


def default_corpus() -> Path:
    try:
        return Path(str(resources.files("eld") / "tests" / "data" / "big-test.txt"))
    except ModuleNotFoundError as error:
        raise SystemExit("no labelled sentences: pass --tsv, or install the eval extra (pip install -e '.[eval]')") \
            from error  # fmt: skip


def snippets(path: Path, *, per_language: int = PER_LANGUAGE, seed: int = 0) -> list[tuple[str, str, int]]:
    """(language, snippet, words) from `language<TAB>sentence` lines, for the languages detected."""
    by_language: dict[str, list[str]] = defaultdict(list)
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            language, _, sentence = line.rstrip("\n").partition("\t")
            if language in LANGUAGES and sentence.strip():
                by_language[language].append(sentence.strip())
    rng = random.Random(seed)
    out = []
    for language in sorted(by_language):
        sentences = by_language[language]
        for sentence in rng.sample(sentences, min(per_language, len(sentences))):
            wanted = rng.randint(5, 20)
            if language in UNSPACED:
                chars = min(int(wanted * UNSPACED[language]), len(sentence))
                if chars >= 5 * UNSPACED[language]:
                    out.append((language, sentence[:chars], int(chars / UNSPACED[language])))
            elif len(words := sentence.split()) >= 5:
                out.append((language, " ".join(words[:wanted]), min(wanted, len(words))))
    return out


def english_titles(path: Path) -> list[str]:
    csv.field_size_limit(10 * 1024 * 1024)
    with path.open(newline="", encoding="utf-8") as handle:
        return [row.get("TITLE") or row.get("title") or "" for row in csv.DictReader(handle)]


def evaluate(path: Path | None, english: list[Path]) -> dict[str, Any]:
    corpus = snippets(path or default_corpus())
    started = time.perf_counter()
    guesses = [detect(text) for _, text, _ in corpus]
    seconds = time.perf_counter() - started
    rows = list(zip(corpus, guesses, strict=True))

    def score(selected: list[tuple[tuple[str, str, int], tuple[str, float] | None]]) -> dict[str, float]:
        right = sum(1 for (label, _, _), guess in selected if guess and guess[0] == label)
        decided = [(label, g) for (label, _, _), g in selected if g and g[1] >= MIN_CONFIDENCE]
        right_decided = sum(1 for label, g in decided if g[0] == label)
        return {"accuracy": round(right / max(len(selected), 1), 4),
                "decided_share": round(len(decided) / max(len(selected), 1), 4),
                "decided_accuracy": round(right_decided / max(len(decided), 1), 4)}  # fmt: skip

    misses = Counter(label for (label, _, _), g in rows if not g or g[0] != label)
    result: dict[str, Any] = {
        "snippets": len(rows),
        "languages": len({label for label, _, _ in corpus}),
        **score(rows),
        "short": score([r for r in rows if r[0][2] <= SHORT_WORDS]),
        "worst_languages": dict(misses.most_common(5)),
        "microseconds_per_text": round(seconds / max(len(rows), 1) * 1e6, 1),
        "min_confidence": MIN_CONFIDENCE,
    }
    titles = [t for p in english for t in english_titles(p) if t.strip()]
    if titles:
        called = [detect(t) for t in titles]
        result["english_headlines"] = {
            "titles": len(titles),
            "called_english": round(sum(1 for g in called if g and g[0] == "en") / len(titles), 4),
            "confidently_other": round(
                sum(1 for g in called if g and g[0] != "en" and g[1] >= MIN_CONFIDENCE) / len(titles), 4),
        }  # fmt: skip
    return result
