"""The language of an article: detected from its text by py3langid (its model ships in the wheel), restricted to
the languages news is published in here, and only when the detector is confident; otherwise the language the
source declares. Measured by `newsagg eval languages` (app/articles/language_eval.py)."""

from __future__ import annotations

import threading
import unicodedata

import numpy as np
from py3langid.langid import MODEL_FILE, LanguageIdentifier

# ISO 639-1 codes of the languages detected. Restricting the model matters: with all 97 of its languages it calls
# about one English headline in eight Nigerian Pidgin, Latin or Luxembourgish.
_LANGUAGE_CODES = (
    "en es fr de it pt nl ru ar zh ja ko hi tr pl sv id vi uk fa he el ro cs hu da no fi bg th bn ur ms tl"
)
LANGUAGES = tuple(_LANGUAGE_CODES.split())
MIN_CONFIDENCE = 0.5  # below it the detector is wrong too often on headlines; the source's language decides
MIN_WORDS = 3  # fewer words say too little (text without spaces: MIN_IDEOGRAPHS characters instead)
MIN_IDEOGRAPHS = 10
SAMPLE_CHARS = 600  # the title and the start of the summary are plenty

_lock = threading.Lock()
_identifier: LanguageIdentifier | None = None


def _model() -> LanguageIdentifier:
    global _identifier
    with _lock:  # loading takes about a second: once per process, whichever thread asks first
        if _identifier is None:
            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            identifier.set_languages(LANGUAGES)
            identifier.nb_ptc = np.ascontiguousarray(identifier.nb_ptc)  # row-major again: twice as fast
            _identifier = identifier
        return _identifier


def _enough_text(text: str) -> bool:
    if len(text.split()) >= MIN_WORDS:
        return True
    wide = sum(1 for ch in text if unicodedata.east_asian_width(ch) in "WF")
    return wide >= MIN_IDEOGRAPHS


def detect(text: str) -> tuple[str, float] | None:
    """(language, probability) when the text is long enough to say; the caller applies MIN_CONFIDENCE."""
    text = " ".join(text[:SAMPLE_CHARS].split())
    if not _enough_text(text):
        return None
    language, probability = _model().classify(text)
    return str(language), float(probability)


def normalize(declared: str | None) -> str | None:
    """A declared language tag ("en-US", "EN_gb", "fil") as the codes detection gives."""
    if not declared:
        return None
    primary = declared.strip().replace("_", "-").split("-")[0].lower()
    return {"fil": "tl", "iw": "he", "in": "id", "nb": "no", "nn": "no"}.get(primary, primary)[:16] or None


def article_language(title: str, summary: str, declared: str | None) -> str | None:
    """The article's language: the detector's when it is confident, else the source's declared one."""
    found = detect(f"{title}\n{summary}")
    if found is not None and found[1] >= MIN_CONFIDENCE:
        return found[0]
    return normalize(declared)
