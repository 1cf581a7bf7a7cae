"""One check of a region or an outlet's country (app/places/countries.py): every edge answers INVALID_REGION for a
code that is no ISO 3166-1 alpha-2 one, and checking never loads the place gazetteer."""

from __future__ import annotations

import subprocess
import sys

from app.services import Services
from tests.conftest import GraphQLClient
from tests.newsroom import administrator, sign_up

BAD = ("UK", "England", "", "\uff24\uff25", "D" * 100_000)  # "DE" in full-width letters; a 100 KB region


def _refusals(payload: dict) -> list[tuple[str, str]]:
    return [(e["code"], e["field"]) for e in payload["errors"]]


async def test_a_bad_region_is_invalid_region_in_queries_and_every_mutation(gql: GraphQLClient,
                                                                            services: Services) -> None:  # fmt: skip
    admin = await administrator(gql, services)
    made = await admin.run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/otago", "country": "nz"})
    source_id = made["sourceCreate"]["source"]["id"]
    for bad in BAD:
        for query in ("feed(region: $r) { totalCount }", "trending(region: $r) { score }"):
            body = await gql.post(f"query($r: String) {{ {query} }}", {"r": bad})
            assert (body.get("data"), body["errors"][0]["extensions"]["code"]) == (None, "INVALID_REGION"), query
        home = (await admin.run("HomeRegionSet", region=bad))["homeRegionSet"]
        assert (home["viewer"], _refusals(home)) == (None, [("INVALID_REGION", "region")])
        rules = (await admin.run("AlertRulesSet", input={"region": bad}))["alertRulesSet"]
        assert (rules["rules"], _refusals(rules)) == (None, [("INVALID_REGION", "region")])
        created = await admin.run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/x", "country": bad})
        assert _refusals(created["sourceCreate"]) == [("INVALID_REGION", "country")]
        if bad == "":
            continue  # `country: ""` hands an outlet back to inference
        updated = (await admin.run("SourceUpdate", id=source_id, input={"country": bad}))["sourceUpdate"]
        assert (updated["source"], _refusals(updated)) == (None, [("INVALID_REGION", "country")])
    home = (await admin.run("HomeRegionSet", region=" gb "))["homeRegionSet"]
    assert (home["errors"], home["viewer"]["homeRegion"]) == ([], "GB")
    reader = gql.as_(await sign_up(gql, "reader@example.com"))
    assert (await reader.run("AlertRulesSet", input={"region": "nz"}))["alertRulesSet"]["rules"]["region"] == "NZ"


CHECK_IN_THE_API = """
import app.api.asgi, app.places.gazetteer as gazetteer
from app.places.countries import InvalidRegion, checked_country
from app.places.outlets import infer
assert checked_country("de") == "DE" and infer("https://www.lemonde.fr/", None, None).country == "FR"
try:
    checked_country("England")
except InvalidRegion:
    pass
print(gazetteer._table.cache_info().currsize)
"""


def test_checking_a_region_in_the_api_never_loads_the_place_gazetteer() -> None:
    # given the API's own modules, when a region is checked and an outlet placed by its domain, then the place table
    # was never read (its cache is empty) in that process
    done = subprocess.run([sys.executable, "-c", CHECK_IN_THE_API], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0"], done.stderr
