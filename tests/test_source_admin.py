"""Managing sources: administrators only unless opened, authority theirs alone, sourceUpdate's checks, names from
the feed itself, and how an operator makes the first administrator."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, update

from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from app.sources.models import CrawlSchedule, Source, SourceStatus
from app.sources.rules import MAX_INTERVAL_MINUTES
from app.text.storable import unstorable
from app.users.models import User
from app.users.service import FIRST_ADMIN_HINT, first_admin_hint
from tests.conftest import REPO, GraphQLClient, document
from tests.feeds import FeedServer, Reply, items, rss
from tests.newsroom import PASSWORD, add_source, administrator, global_id, log_in, sign_up

Crawl = Callable[[], Coroutine[Any, Any, int]]
OPML = """<opml version="2.0"><body><outline text="w" title="Weighty" xmlUrl="http://127.0.0.1:9/weighty.xml"
authority="1.0"/></body></opml>"""


def _codes(payload: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(e["code"], e.get("field")) for e in payload["errors"]]


async def _every_management_mutation(caller: GraphQLClient, source_id: str) -> dict[str, dict[str, Any]]:
    """Each source mutation's payload, as `caller`."""
    answers = {
        "sourceCreate": await caller.run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/new.xml"}),
        "sourcesImport": await caller.run("SourcesImport", opml=OPML),
        "sourceRefresh": await caller.run("SourceRefresh", id=source_id),
        "sourceUpdate": await caller.run("SourceUpdate", id=source_id, input={"name": "Renamed"}),
        "sourceDelete": await caller.run("SourceDelete", id=source_id),
    }
    return {name: data[name] for name, data in answers.items()}


async def test_only_administrators_manage_sources_by_default(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    assert Settings(_env_file=None).open_source_admin is False  # type: ignore[call-arg]
    source_id = global_id("Source", await add_source(services, settings, "wire"))
    reader = gql.as_(await sign_up(gql))
    for caller in (gql, reader):
        for name, payload in (await _every_management_mutation(caller, source_id)).items():
            assert [code for code, _ in _codes(payload)] == ["FORBIDDEN"], name
    async with services.db() as session:
        sources = list(await session.scalars(select(Source)))
    assert [(s.name, s.status) for s in sources] == [("wire", SourceStatus.ACTIVE)]  # nothing changed

    admin = await administrator(gql, services)
    answers = await _every_management_mutation(admin, source_id)
    assert {name: payload["errors"] for name, payload in answers.items()} == {key: [] for key in answers}
    assert answers["sourcesImport"]["created"][0]["name"] == "Weighty"
    assert answers["sourceDelete"]["deletedSourceId"] == source_id
    async with services.db() as session:
        left = {s.feed_url: s.authority for s in await session.scalars(select(Source))}
    assert left == {"http://127.0.0.1:9/new.xml": 0.5, "http://127.0.0.1:9/weighty.xml": 1.0}


async def test_authority_and_deletion_stay_with_administrators_when_sources_are_open(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    source_id = global_id("Source", await add_source(services, settings, "wire"))
    services.settings.open_source_admin = True
    try:
        weighty = await gql.run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/w.xml", "authority": 1.0})
        plain = await gql.run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/p.xml", "name": "Plain"})
        imported = await gql.run("SourcesImport", opml=OPML)
        raised = await gql.run("SourceUpdate", id=source_id, input={"authority": 1.0, "name": "Top"})
        renamed = await gql.run("SourceUpdate", id=source_id, input={"name": "Wire Desk", "category": "world"})
        deleted = await gql.run("SourceDelete", id=source_id)
    finally:
        services.settings.open_source_admin = False
    assert _codes(weighty["sourceCreate"]) == [("FORBIDDEN", "authority")]
    assert plain["sourceCreate"]["errors"] == []
    assert imported["sourcesImport"]["errors"] == []  # added, its authority attribute ignored
    assert _codes(raised["sourceUpdate"]) == [("FORBIDDEN", "authority")]
    assert renamed["sourceUpdate"]["source"]["name"] == "Wire Desk"
    assert [code for code, _ in _codes(deleted["sourceDelete"])] == ["FORBIDDEN"]
    async with services.db() as session:
        rows = {s.feed_url: s for s in await session.scalars(select(Source))}
    assert {url: s.authority for url, s in rows.items()} == {
        "http://127.0.0.1:9/wire": 0.5,
        "http://127.0.0.1:9/p.xml": 0.5,
        "http://127.0.0.1:9/weighty.xml": 0.5,
    }
    assert all(s.admin_fields == [] for s in rows.values())  # the feed may still rename what a non-administrator named


HOSTILE = [  # (input, the field refused)
    ({"name": "x\x00y"}, "name"),
    ({"name": "\ud800 lone surrogate"}, "name"),
    ({"name": "n" * 100_000}, "name"),
    ({"name": "   "}, "name"),
    ({"category": "c" * 101}, "category"),
    ({"language": "english"}, "language"),
    ({"language": "en'; DROP TABLE sources; --"}, "language"),
    ({"siteUrl": "javascript:alert(1)"}, "siteUrl"),
    ({"authority": 1.0000001}, "authority"),
    ({"authority": -1e-9}, "authority"),
    ({"authority": 1e308}, "authority"),
    ({"minIntervalMinutes": 1e-6}, "minIntervalMinutes"),
    ({"minIntervalMinutes": 0}, "minIntervalMinutes"),
    ({"maxIntervalMinutes": -5}, "maxIntervalMinutes"),
    ({"maxIntervalMinutes": 1e300}, "maxIntervalMinutes"),
    ({"maxIntervalMinutes": MAX_INTERVAL_MINUTES + 1}, "maxIntervalMinutes"),
    ({"minIntervalMinutes": 60, "maxIntervalMinutes": 30}, "minIntervalMinutes"),
    ({"minIntervalMinutes": 20}, "minIntervalMinutes"),  # above the stored max of 15
    ({"status": "DEAD"}, "status"),
    ({"name": "Fine", "authority": 2}, "authority"),  # one bad field: nothing changes
]


async def test_source_update_refuses_hostile_values_and_changes_nothing(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    admin = await administrator(gql, services)
    source_id = global_id("Source", await add_source(services, settings, "wire"))
    async with services.db() as session:
        before = (await session.execute(select(Source.__table__))).one()
    for change, field in HOSTILE:
        answer = await _update(admin, source_id, change)
        if any(unstorable(value) for value in change.values() if isinstance(value, str)):
            # a NUL or a lone surrogate: the whole request is refused before any resolver runs (app/api/text_input.py)
            assert [e["extensions"]["code"] for e in answer["errors"]] == ["BAD_USER_INPUT"], change
            continue
        payload = answer["data"]["sourceUpdate"]
        assert payload["source"] is None
        code = "INVALID_URL" if field == "siteUrl" else "INVALID"
        assert _codes(payload) == [(code, field)], change
    async with services.db() as session:
        assert (await session.execute(select(Source.__table__))).one() == before
    for unknown in (global_id("Source", 99999), global_id("Source", 10**20)):
        missing = (await admin.run("SourceUpdate", id=unknown, input={"name": "x"}))["sourceUpdate"]
        assert _codes(missing) == [("NOT_FOUND", "id")]
    answer = await admin.post(document("SourceUpdate"), {"id": global_id("Article", 1), "input": {"name": "x"}})
    assert answer["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def _update(caller: GraphQLClient, source_id: str, change: dict[str, Any]) -> dict[str, Any]:
    """sourceUpdate with the JSON written as ASCII: a lone surrogate travels as its escape, as a client may send it."""
    body = json.dumps({"query": document("SourceUpdate"), "variables": {"id": source_id, "input": change}})
    headers = {"content-type": "application/json", "authorization": f"Bearer {caller.token}"}
    answer: dict[str, Any] = (await caller.http.post("/graphql", content=body, headers=headers)).json()
    return answer


async def test_source_update_renames_refiles_repaces_pauses_and_resumes(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    admin = await administrator(gql, services)
    row_id = await add_source(services, settings, "wire")
    source_id = global_id("Source", row_id)
    change = {"name": "  Wire Desk ", "siteUrl": "https://wire.example/", "category": "world", "language": "PT-BR",
              "authority": 0.9, "minIntervalMinutes": 5, "maxIntervalMinutes": 120, "status": "PAUSED"}  # fmt: skip
    payload = (await admin.run("SourceUpdate", id=source_id, input=change))["sourceUpdate"]
    assert payload["errors"] == []
    assert payload["source"] == {
        "id": source_id,
        "name": "Wire Desk",
        "siteUrl": "https://wire.example/",
        "category": "world",
        "language": "pt-br",
        "authority": 0.9,
        "status": "PAUSED",
        "articleText": True,
        "country": None,  # wire.example and Brazilian Portuguese say nothing of where the outlet is
        "outletKind": "UNKNOWN",
        "outletInferred": True,
    }
    async with services.db.begin() as session:
        source = await session.get(Source, row_id)
        assert source is not None
        assert (source.min_interval_s, source.max_interval_s, source.admin_fields) == (300, 7200, ["name", "site_url"])
        await session.execute(update(CrawlSchedule).values(consecutive_failures=3, gone_streak=2))
    cleared = await admin.run("SourceUpdate", id=source_id, input={"category": "", "language": "", "status": "ACTIVE"})
    expected = payload["source"] | {"category": None, "language": None, "status": "ACTIVE"}
    assert cleared["sourceUpdate"]["source"] == expected
    async with services.db() as session:
        schedule = await session.get(CrawlSchedule, row_id)
    assert schedule is not None
    assert (schedule.consecutive_failures, schedule.gone_streak) == (0, 0)  # resumed with a fresh start


async def test_a_source_is_named_by_its_feed_unless_an_administrator_named_it(
    gql: GraphQLClient, services: Services, feed_server: FeedServer, crawl: Crawl
) -> None:
    admin = await administrator(gql, services)
    for name in ("named", "unnamed", "open"):
        feed_server.routes[f"/{name}.xml"] = Reply(200, rss(items(1, prefix=name), title=f"The {name} Times",
                                                            link=f"https://{name}.example/"))  # fmt: skip
    await admin.run("SourceCreate", input={"feedUrl": feed_server.url("/named.xml"), "name": "Desk"})
    await admin.run("SourceCreate", input={"feedUrl": feed_server.url("/unnamed.xml")})
    services.settings.open_source_admin = True
    try:
        await gql.run("SourceCreate", input={"feedUrl": feed_server.url("/open.xml"), "name": "Best News Ever"})
    finally:
        services.settings.open_source_admin = False
    assert await _identities(gql) == {"named": ("Desk", None), "unnamed": (feed_server.url("/unnamed.xml"), None),
                                      "open": ("Best News Ever", None)}  # fmt: skip
    await crawl()
    assert await _identities(gql) == {"named": ("Desk", "https://named.example/"),
                                      "unnamed": ("The unnamed Times", "https://unnamed.example/"),
                                      "open": ("The open Times", "https://open.example/")}  # fmt: skip

    ids = await _ids(gql)
    await admin.run("SourceUpdate", id=ids["unnamed"], input={"siteUrl": "https://home.example/"})
    for name in ("named", "unnamed", "open"):
        feed_server.routes[f"/{name}.xml"] = Reply(200, rss(items(2, prefix=name), title=f"New {name}",
                                                            link="https://new.example/"))  # fmt: skip
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).values(next_crawl_at=datetime.now(UTC) - timedelta(seconds=1)))
    await crawl()
    assert await _identities(gql) == {"named": ("Desk", "https://new.example/"),  # the name was an administrator's
                                      "unnamed": ("New unnamed", "https://home.example/"),  # and here the site
                                      "open": ("New open", "https://new.example/")}  # fmt: skip


SOURCES = "{ sources(first: 10) { edges { node { id feedUrl name siteUrl } } } }"


async def _nodes(gql: GraphQLClient) -> dict[str, dict[str, Any]]:
    """Sources by the name of their feed file ("/named.xml": "named")."""
    edges = (await gql.post(SOURCES))["data"]["sources"]["edges"]
    return {e["node"]["feedUrl"].rsplit("/", 1)[1].removesuffix(".xml"): e["node"] for e in edges}


async def _identities(gql: GraphQLClient) -> dict[str, tuple[str, str | None]]:
    return {key: (node["name"], node["siteUrl"]) for key, node in (await _nodes(gql)).items()}


async def _ids(gql: GraphQLClient) -> dict[str, str]:
    return {key: node["id"] for key, node in (await _nodes(gql)).items()}


async def test_create_admin_makes_the_first_administrator(
    services: Services, settings: Settings, gql: GraphQLClient
) -> None:
    async with services.db() as session:
        assert await first_admin_hint(session) == FIRST_ADMIN_HINT
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": str(settings.database_url)}
    made = await asyncio.to_thread(_newsagg_with_input, ["users", "create-admin", "Chief@Example.com"], PASSWORD, env)
    assert made.returncode == 0, made.stderr
    again = await asyncio.to_thread(_newsagg_with_input, ["users", "create-admin", "chief@example.com"], PASSWORD, env)
    assert again.returncode == 1
    assert "exists" in again.stderr
    weak = await asyncio.to_thread(_newsagg_with_input, ["users", "create-admin", "b@example.com"], "short", env)
    assert weak.returncode == 1
    async with services.db() as session:
        assert await first_admin_hint(session) is None
        assert list(await session.scalars(select(User.email).where(User.is_admin))) == ["chief@example.com"]
    signed_in = await log_in(gql, "chief@example.com")
    created = await gql.as_(signed_in["token"]).run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/c.xml"})
    assert created["sourceCreate"]["errors"] == []


def _newsagg_with_input(args: list[str], stdin: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=REPO, env=env, input=stdin + "\n",
                          capture_output=True, text=True, timeout=120)  # fmt: skip


async def test_the_api_says_how_to_make_the_first_administrator(services: Services, settings: Settings) -> None:
    env = {**os.environ, "DATABASE_URL": str(settings.database_url), "REDIS_URL": str(settings.redis_url)}
    with _api_process(env) as api:
        line = await asyncio.to_thread(_line_with, api, "no administrator yet")
    assert "newsagg users create-admin EMAIL" in line
    assert "newsagg users grant-admin EMAIL" in line


@contextlib.contextmanager
def _api_process(env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    api = subprocess.Popen([sys.executable, "-m", "app", "api", "--port", str(free_port())], cwd=REPO, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        yield api
    finally:
        api.terminate()
        api.wait(30)


def _line_with(process: subprocess.Popen[str], text: str) -> str:
    """The first line of the process's stderr holding `text` (before the server is up: it comes first)."""
    assert process.stderr is not None
    for line in process.stderr:
        if text in line:
            return line
        if "Uvicorn running" in line:
            break
    raise AssertionError(f"{text!r} was not logged before the server started")
