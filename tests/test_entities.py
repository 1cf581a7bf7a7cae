"""Named entities: extraction from headlines in several languages and scripts, hostile text, the kinds, and entities
as evidence for stories."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime, timedelta

import pytest

from app.entities.evidence import CLASH_PENALTY, ENTITY_WEIGHT, clash, entity_terms, role_clash, role_terms
from app.entities.extractor import MAX_ENTITIES, MAX_NAME, MAX_TEXT, extract
from app.entities.gazetteer import PLACES_FILE
from app.stories.clustering import ClusteringPolicy, IncomingArticle, StoryClusterer, StoryState, article_terms
from tests.conftest import REPO

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)
NOTICE = PLACES_FILE.with_name("places.NOTICE.txt")


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


@pytest.mark.parametrize("sign", ["•", "·", "/", "+", "★", "🇺🇸", "👉"])
def test_a_sign_between_two_names_separates_them(sign: str) -> None:
    people = {"Joe Biden": "PER", "Xi Jinping": "PER", "Bali": "LOC"}
    assert named(f"Joe Biden {sign} Xi Jinping meet in Bali") == people
    assert named(f"Johnson & Johnson {sign} NASA sign a deal") == {"Johnson & Johnson": "ORG", "NASA": "ORG"}


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
    shouting = " ".join(f"Word{n % 7} Alpha Bravo" for n in range(170))  # 500 capitalised words in a headline
    assert all(len(e.name) <= MAX_NAME for e in extract(shouting, shouting))
    assert extract("Abcdefghij" * 100, "-".join(["Abc"] * 300)) == []  # one 1,000-letter "name", one of 300 parts


def test_entities_are_terms_and_a_role_held_by_someone_else_is_counter_evidence() -> None:
    khan = entity_terms(extract("Mayor bans cars", "Mayor Sadiq Khan announced the ban."))
    burnham = entity_terms(extract("Mayor bans cars", "Mayor Andy Burnham announced the ban."))
    assert khan == {"@per:sadiq khan": ENTITY_WEIGHT, "@mayor=per:sadiq khan": ENTITY_WEIGHT}
    assert role_clash(burnham, khan) == CLASH_PENALTY
    assert role_clash(khan, khan | burnham) == 0.0  # the story gives the role to him too
    assert role_clash(khan, {"mayor": 1.0}) == 0.0  # a story that names no mayor


def test_a_different_person_in_the_same_role_starts_another_story() -> None:
    # given: a story about one mayor's ban, and two later articles worded alike, one naming another mayor
    first = ("Mayor bans diesel cars from city centre", "Mayor Sadiq Khan said the ban starts in May.")
    same = ("City centre to ban diesel vans", "Mayor Sadiq Khan said the ban starts in June.")
    other = ("City centre to ban diesel vans", "Mayor Andy Burnham said the ban starts in June.")
    background = ["Stocks fall as oil prices rise", "Apple unveils new iPhone", "Storm hits the coast of Florida",
                  "Football club sacks manager", "Central bank holds rates", "Mayor opens new library"] * 3  # fmt: skip

    def stories(texts: list[tuple[str, str]]) -> list[int]:
        clusterer, state = StoryClusterer(ClusteringPolicy(threshold=0.45)), StoryState()
        for k, title in enumerate(background):
            clusterer.assign(state, IncomingArticle(100 + k, title, "", "wire", NOW))
        return [clusterer.assign(state, IncomingArticle(k, title, summary, f"o{k}", NOW + timedelta(minutes=k)))
                for k, (title, summary) in enumerate(texts)]  # fmt: skip

    # when / then
    assert len(set(stories([first, same]))) == 1
    assert len(set(stories([first, other]))) == 2


def test_the_place_list_ships_with_its_geonames_attribution() -> None:
    """GeoNames data is CC BY 4.0: wherever the derived list is installed, its attribution is too."""
    shipped = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert {PLACES_FILE.name, NOTICE.name} <= set(shipped["app.entities"])
    notice = NOTICE.read_text()
    assert all(words in notice for words in ("GeoNames", "https://www.geonames.org/", "CC BY 4.0", "Changes"))


@pytest.mark.parametrize(
    ("title", "holder", "story"),
    [
        ("President Biden signs infrastructure bill into law", "per:biden",
         "President Joe Biden signs infrastructure bill"),
        ("Mayor Adams unveils budget", "per:adams", "Mayor Eric Adams unveils city budget"),
        ("Chancellor Scholz visits Paris", "per:scholz", "Chancellor Olaf Scholz visits Paris"),
        ("Prime Minister Sunak calls election", "per:sunak", "Prime Minister Rishi Sunak calls election"),
    ],
)  # fmt: skip
def test_a_role_holder_named_by_surname_is_the_holder_named_in_full(title: str, holder: str, story: str) -> None:
    # given: a story whose articles name the holder in full, and an article that gives only the surname
    article, full = article_terms(title, "", "en"), article_terms(story, "", "en")
    assert any(term.endswith("=" + holder) for term in role_terms(article))
    # when / then: the same person is no counter-evidence, either way round
    assert clash(role_terms(article), full) == 0.0
    assert clash(role_terms(full), article) == 0.0


def test_another_holder_of_the_role_still_clashes_whether_named_in_full_or_by_surname() -> None:
    story = article_terms("President Joe Biden signs infrastructure bill", "", "en")
    for title in ("President Trump signs infrastructure bill", "President Donald Trump signs infrastructure bill"):
        assert clash(role_terms(article_terms(title, "", "en")), story) == CLASH_PENALTY
    # a surname that only ends another ("Biden" in "Obiden") is not the same person
    assert clash(("@president=per:biden",), {"@president=per:joe obiden": 1.0}) == CLASH_PENALTY


def test_an_article_naming_the_holder_by_surname_joins_the_story_that_names_him_in_full() -> None:
    # given: a story from articles naming President Joe Biden, among unrelated stories
    clusterer, state = StoryClusterer(ClusteringPolicy(threshold=0.45)), StoryState()
    background = ["Stocks fall as oil prices rise", "Apple unveils new iPhone", "Storm hits the coast of Florida",
                  "Football club sacks manager", "Central bank holds rates", "Senate opens session"] * 3  # fmt: skip
    for k, title in enumerate(background):
        clusterer.assign(state, IncomingArticle(100 + k, title, "", "wire", NOW))
    story = clusterer.assign(state, IncomingArticle(1, "President Joe Biden signs infrastructure bill", "", "o1", NOW))
    # when: an article names him as "President Biden"
    later = IncomingArticle(
        2, "Infrastructure bill signed into law by President Biden", "", "o2", NOW + timedelta(minutes=5)
    )
    # then: it joins that story
    assert clusterer.assign(state, later) == story


@pytest.mark.parametrize(
    ("title", "name", "role"),
    [
        ("Sen. Elizabeth Warren unveils wealth tax plan", "Elizabeth Warren", "senator"),
        ("Gov. Newsom signs state budget", "Newsom", "governor"),
        ("Texas Gov. Greg Abbott signs bill", "Greg Abbott", "governor"),
        ("Rep. Alexandria Ocasio-Cortez speaks on climate", "Alexandria Ocasio-Cortez", "representative"),
        ("Gen. Mark Milley retires from the Army", "Mark Milley", "general"),
        ("Lt. Gov. Dan Patrick says session will resume", "Dan Patrick", "lieutenant governor"),
        ("Sgt. John Smith honoured for bravery", "John Smith", None),
        ("Col. Sanders recipe sold at auction", "Sanders", None),
        ("Prof. Stephen Hawking lecture streamed", "Stephen Hawking", None),
        ("Capt. Tom Moore raises millions", "Tom Moore", None),
    ],
)  # fmt: skip
def test_abbreviated_titles_are_roles_or_honorifics_not_part_of_the_name(title: str, name: str, role: str | None,
                                                                          ) -> None:  # fmt: skip
    people = {e.name: e.role for e in extract(title, "", "en") if e.kind == "PER"}
    assert people == {name: role}


def test_a_title_abbreviation_ends_no_sentence_but_a_name_before_a_full_stop_does() -> None:
    assert named("Police thank Sgt. Jane Doe", "") == {"Jane Doe": "PER"}
    assert named("Florida Gov. touts policies", "") == {"Florida": "LOC"}  # a title with no name after it
    assert named("Texas Lt. Gov. Dan Patrick says", "") == {"Texas": "LOC", "Dan Patrick": "PER"}
    assert named("It was said by Collins. Tesla fell", "Tesla fell again on Tuesday.")["Tesla"] == "ORG"


@pytest.mark.parametrize("invisible", ["\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"])
def test_soft_hyphens_and_zero_width_characters_do_not_split_a_name(invisible: str) -> None:
    found = extract(f"Angela Mer{invisible}kel besucht Paris heute", "", "de")
    assert {e.key for e in found} == {"per:angela merkel", "loc:paris"}


@pytest.mark.parametrize(
    ("title", "before", "name", "role"),
    [
        ("Texas Lieutenant Governor Dan Patrick says", "Texas", "Dan Patrick", "lieutenant governor"),
        ("Texas Lt. Gov. Dan Patrick says", "Texas", "Dan Patrick", "lieutenant governor"),
        ("UK Prime Minister Boris Johnson tests positive", "UK", "Boris Johnson", "prime minister"),
    ],
)  # fmt: skip
def test_a_role_of_two_words_written_out_or_abbreviated_is_cut_from_the_name_before_it(
    title: str, before: str, name: str, role: str
) -> None:
    found = {e.name: (e.kind, e.role) for e in extract(title, "", "en")}
    assert found == {before: ("LOC", None), name: ("PER", role)}
