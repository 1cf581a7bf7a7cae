"""Region alert rules: a breaking story alerts a rule with a region when its articles name a place in that country
or an outlet there covers it (app/places' locality), and the API takes the region as the feed's region argument."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text

from app.notifications.fanout import fan_out
from app.services import Services
from app.settings import Settings
from tests.alerts import add_reader, count
from tests.conftest import GraphQLClient, document
from tests.newsroom import add_breaking_event, sign_up
from tests.places_newsroom import add_local_story, add_outlets


async def _notified(services: Services, user_id: int) -> list[int]:
    async with services.engine.connect() as connection:
        rows = await connection.scalars(text("SELECT story_id FROM notifications WHERE user_id = :u ORDER BY story_id"),
                                        {"u": user_id})  # fmt: skip
        return list(rows)


async def test_a_german_story_alerts_a_german_rule_and_not_a_french_one(services: Services,
                                                                       settings: Settings) -> None:  # fmt: skip
    # given the Berlin power cut (told by Tagesschau, Süddeutsche and Reuters) and the Paris strike (French outlets)
    outlets = await add_outlets(services, settings)
    berlin = await add_local_story(services, outlets, "berlin", age=timedelta(minutes=5))
    paris = await add_local_story(services, outlets, "paris", age=timedelta(minutes=5))
    german = await add_reader(services, "de@example.com", region="DE")
    french = await add_reader(services, "fr@example.com", region="FR")
    british = await add_reader(services, "gb@example.com", region="GB")  # Reuters, a British wire, covers Berlin
    spanish = await add_reader(services, "es@example.com", region="ES")
    everywhere = await add_reader(services, "all@example.com")
    # when both break
    await add_breaking_event(services, berlin)
    await add_breaking_event(services, paris)
    report = await fan_out(services.engine, settings)
    # then each rule heard of the stories local to its country only
    assert await _notified(services, german) == [berlin]
    assert await _notified(services, french) == [paris]
    assert await _notified(services, british) == [berlin]
    assert await _notified(services, spanish) == []
    assert await _notified(services, everywhere) == sorted([berlin, paris])
    assert report.notified == 5


async def test_a_region_with_other_rules_must_match_both(services: Services, settings: Settings) -> None:
    outlets = await add_outlets(services, settings)
    valencia = await add_local_story(services, outlets, "valencia", age=timedelta(minutes=5))
    sports_in_spain = await add_reader(services, "sport@example.com", region="ES", topics=["sports"])
    world_in_spain = await add_reader(services, "world@example.com", region="ES", topics=["world"])
    await add_breaking_event(services, valencia, ["world"], ["es"])
    await fan_out(services.engine, settings)
    assert await _notified(services, sports_in_spain) == []
    assert await _notified(services, world_in_spain) == [valencia]
    assert await count(services, "SELECT count(*) FROM notifications") == 1


async def test_a_rule_region_is_an_iso_country_code_as_in_the_feed(gql: GraphQLClient) -> None:
    reader = gql.as_(await sign_up(gql))
    stored = (await reader.run("AlertRulesSet", input={"region": "de"}))["alertRulesSet"]
    assert (stored["errors"], stored["rules"]["region"]) == ([], "DE")
    cleared = (await reader.run("AlertRulesSet", input={}))["alertRulesSet"]
    assert cleared["rules"]["region"] is None
    for bad in ("UK", "Narnia", "", "D" * 100_000, "\uff24\uff25"):  # the last: "DE" in full-width letters
        refused = (await reader.run("AlertRulesSet", input={"region": bad}))["alertRulesSet"]
        assert (refused["rules"], [(e["code"], e["field"]) for e in refused["errors"]]) == (
            None, [("INVALID_REGION", "region")]), bad[:20]  # fmt: skip
    nul = await reader.post(document("AlertRulesSet"), {"input": {"region": "de\x00"}})
    assert nul["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"  # refused with every NUL, before the region
    assert (await reader.run("AlertRulesSet", input={"region": "fr"}))["alertRulesSet"]["rules"]["region"] == "FR"
