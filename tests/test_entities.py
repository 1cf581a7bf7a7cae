"""Named entities: extraction from headlines in several languages and scripts, hostile text, and the kinds."""

from __future__ import annotations

import pytest

from app.entities.extractor import MAX_ENTITIES, MAX_TEXT, extract


def named(title: str, summary: str = "", language: str | None = "en") -> dict[str, str]:
    return {e.name: e.kind for e in extract(title, summary, language)}


def test_people_organisations_and_places_of_an_english_headline() -> None:
    found = named(
        "Merkel says Germany will back Airbus rescue as Paris talks stall",
        "Chancellor Angela Merkel told the Bundestag on Tuesday that the European Commission must approve the plan.",
    )
    assert found == {"Angela Merkel": "PER", "Germany": "LOC", "Paris": "LOC", "European Commission": "ORG"}


def test_a_surname_alone_is_the_person_named_in_full() -> None:
    [person, *_] = extract("Johnson slams brakes on lockdown easing", "Prime Minister Boris Johnson said Mr Johnson's "
                           "team would wait.")  # fmt: skip
    assert (person.name, person.kind, person.count, person.role) == ("Boris Johnson", "PER", 3, "prime minister")
    assert person.key == "per:boris johnson"


def test_roles_split_names_and_acronyms_are_organisations() -> None:
    found = named("Kodak CEO Jim Continenza got options before NASA deal", "")
    assert found == {"Kodak": "ORG", "Jim Continenza": "PER", "NASA": "ORG"}  # the name before "CEO" is its company
    assert {e.name: e.role for e in extract("Kodak CEO Jim Continenza got options")}["Jim Continenza"] == (
        "chief executive"
    )


def test_first_words_and_common_capitals_are_not_names() -> None:
    assert named("Pregnant teenager fighting for her life after crash") == {}
    assert named("Coronavirus: Dentists facing critical shortage of kit") == {}
    assert named("Stock Market Live Tracker During Coronavirus Pandemic", "The latest on markets.") == {}
    # a headline in headline case keeps only what its summary or the gazetteer confirms
    summary = "Elon Musk tweeted that Tesla stock was too high. Tesla fell."
    assert named("Tesla Stock Tanks After Musk Tweets", summary) == {"Elon Musk": "PER", "Tesla": "ORG"}


def test_one_entity_across_spellings() -> None:
    keys = {e.key for e in extract("U.S. and US officials meet in São Paulo", "Officials in Sao Paulo said so.")}
    assert keys == {"loc:us", "loc:sao paulo"}


@pytest.mark.parametrize(
    ("language", "title", "summary", "expected"),
    [
        ("de", "Scholz trifft Macron in Berlin", "Bundeskanzler Olaf Scholz empfing Emmanuel Macron am Montag.",
         {"Olaf Scholz": "PER", "Emmanuel Macron": "PER", "Berlin": "LOC"}),
        ("fr", "Emmanuel Macron reçu par la Commission européenne à Bruxelles", "",
         {"Emmanuel Macron": "PER", "Bruxelles": "LOC"}),
        ("ru", "Владимир Путин прибыл в Москву", "Как сообщает пресс-служба, Владимир Путин встретится с "
         "губернатором.", {"Владимир Путин": "PER"}),
        ("es", "Pedro Sánchez visita Madrid", "El presidente Pedro Sánchez habló en Madrid.",
         {"Pedro Sánchez": "PER", "Madrid": "LOC"}),
    ],
)  # fmt: skip
def test_languages_with_capitals_get_names(language: str, title: str, summary: str, expected: dict[str, str]) -> None:
    assert named(title, summary, language).items() >= expected.items()


@pytest.mark.parametrize(
    "title",
    ["习近平会见美国总统拜登", "東京五輪、無観客で開催へ", "윤석열 대통령 미국 방문", "นายกรัฐมนตรีเยือนญี่ปุ่น",
     "بايدن يلتقي ماكرون في باريس", "नरेंद्र मोदी अमेरिका पहुंचे"],
)  # fmt: skip
def test_scripts_without_capitals_get_none_rather_than_noise(title: str) -> None:
    assert extract(title, title, None) == []


def test_hostile_text_is_handled() -> None:
    huge = "Angela Merkel met Emmanuel Macron. " * 200_000 + "Olaf Scholz came last."  # 7 MB of summary
    found = extract("Merkel meets Macron", huge)
    assert {e.name for e in found} == {"Angela Merkel", "Emmanuel Macron"}  # its first MAX_TEXT characters only
    assert len(huge) > 1000 * MAX_TEXT
    odd = "\u200bAngela\u200d Merkel\u202e \U0001f600 Ma\u0301cron\x00 \ufeffÉLYSÉE \u0000 " + "\u0301" * 1000
    assert all(e.kind in ("PER", "ORG", "LOC") for e in extract(odd, odd))
    names = " ".join(f"Person{n} Surname{n}," for n in range(500))
    assert len(extract("Roll call", names)) == MAX_ENTITIES
    assert extract("", "") == []
    assert extract("   ", "\n\n") == []
    assert extract("ALL CAPS HEADLINE ABOUT NOTHING", "") == []
