"""Terms of headlines in each language: words segmented, stop words out, stemmed, accents folded; unspaced scripts
as character n-grams."""

from __future__ import annotations

import pytest

from app.stories.text_features import terms
from app.text.segments import segments
from app.text.word_forms import fold_accents, word_form


def test_english_is_stemmed_and_names_weigh_double() -> None:
    assert terms("Elections: the President's elected rivals", language="en") == {
        "elect": 2.0, "presid": 2.0, "rival": 1.0}  # fmt: skip


def test_latin_accents_fold_after_stemming() -> None:
    """Not "curit" and "rich" (ASCII-only words), nor a French stemmer confused by a folded suffix."""
    assert terms("Sécurité à Zürich", language="fr") == {"secur": 1.0, "zurich": 2.0}
    assert terms("SÉCURITÉ à Zurich", language="fr") == {"secur": 1.0, "zurich": 2.0}
    assert word_form("élections", "fr") == word_form("election", "fr") == "elect"


def test_french_and_italian_elision() -> None:
    assert word_form("l'enquête", "fr") == word_form("enquête", "fr")
    assert word_form("dell'Europa", "it") == word_form("Europa", "it")
    assert word_form("aujourd'hui", "en") == "aujourd'hui"  # not an elision outside French, Italian, Catalan


@pytest.mark.parametrize(("language", "title", "expected"), [
    ("de", "Der Bundestag und die Regierung", {"bundestag": 2.0, "regier": 2.0}),
    ("es", "El sismo de magnitud 7,1 en el sur", {"sism": 1.0, "magnitud": 1.0, "sur": 1.0}),
    ("ru", "Банк России поднял ключевую ставку", {"банк": 1.0, "росс": 2.0, "подня": 1.0, "ключев": 1.0,
                                               "ставк": 1.0}),
    ("ar", "زلزال يضرب جنوب المغرب", {"زلزال": 1.0, "يضرب": 1.0, "جنوب": 1.0, "مغرب": 1.0}),
    ("hi", "चंद्रयान-3 दक्षिणी ध्रुव पर उतरा", {"चंद्रयान-3": 1.0, "दक्षिण": 1.0, "ध्रुव": 1.0, "उतर": 1.0}),
])  # fmt: skip
def test_stop_words_go_and_words_are_stemmed_per_language(language: str, title: str, expected: dict[str, float],
                                                          ) -> None:  # fmt: skip
    assert terms(title, language=language) == expected


def test_greek_capitals_without_accents_match_accented_lower_case() -> None:
    assert terms("ΣΕΙΣΜΟΣ ΣΤΗΝ ΚΡΗΤΗ", language="el").keys() == terms("Σεισμός στην Κρήτη", language="el").keys()


def test_cyrillic_yo_and_arabic_vowel_points_fold() -> None:
    assert word_form("Королёв", "ru") == word_form("Королев", "ru")
    assert word_form("مُدَرِّسَة", "ar") == word_form("مدرسة", "ar")


def test_marks_that_are_vowels_or_tones_stay() -> None:
    assert fold_accents("चुनाव") == "चुनाव"  # Devanagari vowel signs are letters of the word
    assert list(segments("चुनाव आयोग")) == [("word", "चुनाव"), ("word", "आयोग")]
    assert word_form("Việt", "vi") == "việt"  # Vietnamese tones tell words apart
    assert word_form("Việt", "en") == "viet"


def test_chinese_is_cut_into_bigrams_and_stop_words_go() -> None:
    assert list(segments("台风登陆广东")) == [("gram", g) for g in ("台风", "风登", "登陆", "陆广", "广东")]
    assert "我们" not in terms("我们的台风", language="zh")
    assert terms("台风", language="zh") == {"台风": 1.0}


def test_japanese_keeps_katakana_words_and_kanji_bigrams_and_drops_kana_particles() -> None:
    assert list(segments("日銀がマイナス金利を解除")) == [
        ("gram", "日銀"), ("gram", "マイナス"), ("gram", "金利"), ("gram", "解除")]  # fmt: skip


def test_korean_bigrams_and_thai_trigrams() -> None:
    assert [g for _, g in segments("기준금리 인상")] == ["기준", "준금", "금리", "인상"]
    assert [g for _, g in segments("ไทยเลือก")] == ["ไทย", "ทยเ", "ยเล", "เลื", "ลือ", "ือก"]


def test_mixed_scripts_and_full_width_forms() -> None:
    assert list(segments("F-15C战机坠毁")) == [("word", "F-15C"), ("gram", "战机"), ("gram", "机坠"), ("gram", "坠毁")]
    assert terms("ＡＰＥＣ　２０２５", language="en") == {"apec": 1.0, "2025": 1.0}
    assert list(segments("U.S. «jet» — crash…")) == [("word", "U.S"), ("word", "jet"), ("word", "crash")]


def test_unknown_language_is_read_as_english() -> None:
    assert terms("Presidential elections", language=None) == terms("Presidential elections", language="en")
    assert terms("Presidential elections") == {"presidenti": 1.0, "elect": 1.0}


def test_a_hyphenated_compound_is_its_parts_unless_it_has_a_digit() -> None:
    """Other headlines of the story write the parts apart ("Fannie and Freddie", "Chiquita buys Fyffes")."""
    assert terms("Senators agree Fannie-Freddie overhaul") == {"senat": 1.0, "agre": 1.0, "fanni": 2.0,
                                                                "freddi": 2.0, "overhaul": 1.0}  # fmt: skip
    assert terms("F-15C jets and COVID-19 shots") == {"f-15c": 1.0, "jet": 1.0, "covid-19": 2.0, "shot": 1.0}


def test_hostile_text_is_cut_in_linear_time_into_bounded_terms() -> None:
    """A megabyte of one unspaced run, of dotted and hyphenated words, and of bare combining marks."""
    assert len(terms("台风" * 250_000, language="zh")) == 2  # 台风 and 风台
    assert terms("ab-" * 250_000 + "cd", language="en") == {"ab": 250_000.0, "cd": 1.0}
    assert terms("\u0301" * 500_000 + "x", language="en") == {}
    assert terms("\u0301" * 500_000, language="el") == {}


@pytest.mark.parametrize("invisible", ["\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"])
def test_soft_hyphens_and_zero_width_characters_sit_inside_words(invisible: str) -> None:
    """A feed's `&shy;` (U+00AD, common in German) or a zero-width character is invisible: the word reads as one."""
    assert list(segments(f"Bundes{invisible}kanzler{invisible} besucht Paris")) == [
        ("word", "Bundeskanzler"), ("word", "besucht"), ("word", "Paris")]  # fmt: skip
    assert terms(f"Bundes{invisible}kanzler besucht Paris", language="de") == terms("Bundeskanzler besucht Paris",
                                                                                    language="de")  # fmt: skip
    assert list(segments(f"台{invisible}风")) == [("gram", "台风")]
