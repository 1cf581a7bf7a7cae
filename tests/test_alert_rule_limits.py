"""Alert rules at and past their limits: 100 sources or entities and 20 languages work, and a breaking story still
reaches the reader through the last of them; 101 or 10,000 are refused in the payload, naming the field."""

from __future__ import annotations

from datetime import timedelta
from itertools import product
from string import ascii_lowercase

from sqlalchemy import text

from app.notifications.fanout import fan_out
from app.notifications.rules import MAX_ITEMS
from app.services import Services
from app.settings import Settings
from app.text.language_codes import MAX_LANGUAGES
from app.topics.keywords import Topic
from tests.conftest import GraphQLClient
from tests.newsroom import add_breaking_event, sign_up
from tests.places_newsroom import add_local_story, add_outlets

LANGUAGE_DECOYS = ["aa", "ab", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bi", "bm",
                   "bn", "bo", "br"]  # fmt: skip


def _refusals(payload: dict) -> list[tuple[str, str]]:
    return [(e["code"], e["field"]) for e in payload["errors"]]


async def test_rules_at_the_limit_match_through_their_last_item_and_past_it_are_refused(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    # given the Berlin power cut, told by Tagesschau among others and naming Berlin
    outlets = await add_outlets(services, settings)
    berlin = await add_local_story(services, outlets, "berlin", age=timedelta(minutes=5))
    tagesschau = outlets["Tagesschau"]
    decoy_ids = list(range(10**9, 10**9 + MAX_ITEMS - 1))
    decoy_keys = [f"per:nobody {n}" for n in range(MAX_ITEMS)]
    limits = {  # every list as long as a rule takes, what matches the story last
        "by_source": {"sourceIds": [*decoy_ids, tagesschau], "languages": [*LANGUAGE_DECOYS, "de"]},
        "by_entity": {"entities": [*decoy_keys[1:], "LOC:Berlin"]},
        "by_nothing": {"entities": decoy_keys, "sourceIds": decoy_ids},
    }
    assert len(LANGUAGE_DECOYS) + 1 == MAX_LANGUAGES
    readers = {}
    for name, rule in limits.items():
        readers[name] = gql.as_(await sign_up(gql, f"{name}@example.com"))
        stored = (await readers[name].run("AlertRulesSet", input=rule))["alertRulesSet"]
        assert stored["errors"] == [], name
    # when more than a rule takes is asked for, then it is refused, naming the field, and the rule is unchanged
    for field, one_more, flood in (
        ("sourceIds", [*decoy_ids, 1, 2], list(range(1, 10_001))),
        ("entities", [*decoy_keys, "per:one more"], [f"per:someone {n}" for n in range(10_000)]),
        (
            "languages",
            [*LANGUAGE_DECOYS, "de", "en"],
            ["".join(c) for c in product(ascii_lowercase, repeat=3)][:10_000],
        ),
    ):
        for values in (one_more, flood):
            refused = (await readers["by_nothing"].run("AlertRulesSet", input={field: values}))["alertRulesSet"]
            assert (refused["rules"], _refusals(refused)) == (None, [("INVALID", field)]), (field, len(values))
    # and a breaking story in German reaches the readers whose last source or entity is its own, not the other
    await add_breaking_event(services, berlin, ["world"], ["de"])
    await fan_out(services.engine, settings)
    async with services.engine.connect() as connection:
        notified = set(await connection.scalars(text(
            "SELECT u.email FROM notifications n JOIN users u ON u.id = n.user_id WHERE n.story_id = :s"),
            {"s": berlin}))  # fmt: skip
    assert notified == {"by_source@example.com", "by_entity@example.com"}
    # and 10,000 topics are the few distinct ones, each once
    topics = [t.name for t in Topic] * (10_000 // len(Topic))
    stored = (await readers["by_nothing"].run("AlertRulesSet", input={"topics": topics}))["alertRulesSet"]
    assert (stored["errors"], sorted(stored["rules"]["topics"])) == ([], sorted(t.name for t in Topic))
