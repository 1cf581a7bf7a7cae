"""Invariant I-10: a reader reads and changes only their own history, interests and feed. Every user-scoped field is
tried as its owner, as another reader and as nobody; every root field is classified, so a new one cannot slip in
unchecked."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import httpx
import websockets
from sqlalchemy import func, update

from app.api.asgi import create_app
from app.api.schema import build_schema
from app.services import Services
from app.settings import Settings
from app.users.models import UserSession
from tests.conftest import GraphQLClient, document
from tests.newsroom import StorySpec, add_source, add_story, global_id, log_in, sign_up

PUBLIC_QUERIES = {"node", "sources", "sourcesOpml", "source", "articles", "article", "stories", "story",
                  "breakingEvents", "topicFeed", "breaking", "trending", "search", "health", "viewer",
                  "feed", "rateLimit", "trendingEntities"}  # fmt: skip
# viewer: null for nobody, and only ever the caller's own account; feed: global for nobody, personal otherwise;
# rateLimit: only ever the caller's own budget
PUBLIC_MUTATIONS = {"signUp", "logIn", "logOut"}  # logOut ends only the caller's own session(s)
ADMIN_MUTATIONS = {"sourceCreate", "sourcesImport", "sourceRefresh", "sourceUpdate", "sourceDelete"}
ADMIN_FIELDS = {  # administrators only: anyone else is refused
    "deadDeliveries": "{ deadDeliveries { id } }",
    "deliveriesReplay": 'mutation { deliveriesReplay(ids: ["1"]) { replayed } }',
}
# a reader's own: nobody is refused, and what one reader has or sets never shows up for another
USER_QUERIES = {
    "notifications": "{ notifications { edges { node { id } } } }",
    "unreadNotifications": "{ unreadNotifications }",
    "alertRules": "{ alertRules { capPerHour topics } }",
    "webhookEndpoints": "{ webhookEndpoints { url } }",
    "shareLink": "query($c: String!) { shareLink(code: $c) { code } }",
}
USER_MUTATIONS = {
    "apiKeyCreate": ('mutation { apiKeyCreate(name: "x") { errors { code } } }', {}),
    "apiKeyRevoke": ('mutation { apiKeyRevoke(id: "1") { errors { code } } }', {}),
    "topicFollow": ("mutation { topicFollow(topic: SPORTS) { errors { code } } }", {}),
    "topicUnfollow": ("mutation { topicUnfollow(topic: SPORTS) { errors { code } } }", {}),
    "sourceFollow": ("mutation($s: ID!) { sourceFollow(sourceId: $s) { errors { code } } }", {"s": "source"}),
    "sourceUnfollow": ("mutation($s: ID!) { sourceUnfollow(sourceId: $s) { errors { code } } }", {"s": "source"}),
    "sourceMute": ("mutation($s: ID!) { sourceMute(sourceId: $s) { errors { code } } }", {"s": "source"}),
    "sourceUnmute": ("mutation($s: ID!) { sourceUnmute(sourceId: $s) { errors { code } } }", {"s": "source"}),
    "engagementRecord": (
        'mutation($a: ID!) { engagementRecord(articleId: $a, action: READ, sessionId: "s") { errors { code } } }',
        {"a": "article"},
    ),
    "preferredLanguagesSet": ('mutation { preferredLanguagesSet(languages: ["en"]) { errors { code } } }', {}),
    "homeRegionSet": ('mutation { homeRegionSet(region: "DE") { errors { code } } }', {}),
    "shareLinkCreate": (
        "mutation($a: ID!) { shareLinkCreate(input: {articleId: $a}) { shareLink { code } errors { code } } }",
        {"a": "article"},
    ),
    "alertRulesSet": ("mutation { alertRulesSet(input: {capPerHour: 3, topics: [SPORTS]}) { errors { code } } }", {}),
    "storyFollow": ("mutation($s: ID!) { storyFollow(id: $s) { errors { code } } }", {"s": "story"}),
    "storyUnfollow": ("mutation($s: ID!) { storyUnfollow(id: $s) { errors { code } } }", {"s": "story"}),
    "notificationsMarkRead": ("mutation { notificationsMarkRead { marked } }", {}),
    "webhookEndpointSet": (
        'mutation($k: ID!) { webhookEndpointSet(apiKeyId: $k, url: "https://hooks.example.org/in") '
        "{ errors { code } } }",
        {"k": "key"},
    ),
}
VIEWER = """{ viewer { email preferredLanguages apiKeys { name } interests { topic weight } followedTopics
                       followedSources { name } mutedSources { name } } }"""


def test_every_root_field_is_classified(settings: Settings) -> None:
    schema = build_schema(settings)
    queries = {f.name for f in schema.get_type_by_name("Query").fields}  # type: ignore[union-attr]
    mutations = {f.name for f in schema.get_type_by_name("Mutation").fields}  # type: ignore[union-attr]
    queries = {schema.config.name_converter.apply_naming_config(q) for q in queries}
    mutations = {schema.config.name_converter.apply_naming_config(m) for m in mutations}
    assert queries == PUBLIC_QUERIES | set(USER_QUERIES) | (set(ADMIN_FIELDS) & queries)
    assert mutations == PUBLIC_MUTATIONS | ADMIN_MUTATIONS | set(USER_MUTATIONS) | (set(ADMIN_FIELDS) & mutations)


async def test_nobody_may_use_a_user_scoped_field(gql: GraphQLClient, services: Services,
                                                  settings: Settings) -> None:  # fmt: skip
    ids = await _world(services, settings)
    ids["key"] = global_id("ApiKey", 1)
    for name, (query, variables) in USER_MUTATIONS.items():
        answer = await gql.post(query, {k: ids[v] for k, v in variables.items()})
        assert answer["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", name
    for name, query in (USER_QUERIES | ADMIN_FIELDS).items():
        answer = await gql.post(query, {"c": "AAAAAAAAAAAAAAAA"} if "$c" in query else None)
        refused = answer.get("errors") and answer["errors"][0]["extensions"]["code"] in ("UNAUTHENTICATED", "FORBIDDEN")
        assert refused or answer["data"][name] is None, (name, answer)
    assert (await gql.post(VIEWER))["data"]["viewer"] is None
    forged = gql.as_("nas_" + "0" * 43)  # a well-formed token that was never issued
    assert (await forged.post(VIEWER))["data"]["viewer"] is None
    assert (await forged.post(*USER_MUTATIONS["topicFollow"]))["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_reader_sees_and_changes_only_their_own(gql: GraphQLClient, services: Services,
                                                       settings: Settings) -> None:  # fmt: skip
    ids = await _world(services, settings)
    alice = gql.as_(await sign_up(gql, "alice@example.com"))
    bob = gql.as_(await sign_up(gql, "bob@example.com"))
    before_bob = (await bob.post(VIEWER))["data"]["viewer"]
    bob_before = {name: (await bob.post(query, {"c": "AAAAAAAAAAAAAAAA"} if "$c" in query else None))["data"]
                  for name, query in USER_QUERIES.items()}  # fmt: skip
    own = (await alice.post('mutation { apiKeyCreate(name: "alice hooks") { apiKey { id } } }'))["data"]
    ids["key"] = own["apiKeyCreate"]["apiKey"]["id"]
    shared = ""
    for name, (query, variables) in USER_MUTATIONS.items():
        answer = await alice.post(query, {k: ids[v] for k, v in variables.items()})
        assert "errors" not in answer, (name, answer)
        if name == "shareLinkCreate":
            shared = answer["data"][name]["shareLink"]["code"]
    for name, query in ADMIN_FIELDS.items():  # a reader is not an administrator
        assert (await alice.post(query))["errors"][0]["extensions"]["code"] == "FORBIDDEN", name
    assert (await alice.post(USER_QUERIES["shareLink"], {"c": shared}))["data"]["shareLink"] == {"code": shared}
    assert (await bob.post(USER_QUERIES["shareLink"], {"c": shared}))["data"]["shareLink"] is None  # not his
    hijack = await bob.post(USER_MUTATIONS["webhookEndpointSet"][0], {"k": ids["key"]})  # Alice's key
    assert hijack["data"]["webhookEndpointSet"]["errors"][0]["code"] == "NOT_FOUND"
    bob_after = {name: (await bob.post(query, {"c": shared} if "$c" in query else None))["data"]
                 for name, query in USER_QUERIES.items()}  # fmt: skip
    assert bob_after == bob_before  # none of Alice's alerts, rules, endpoints or links show up for Bob
    key = (await alice.post('mutation { apiKeyCreate(name: "alice app") { apiKey { id } } }'))["data"]
    key_id = key["apiKeyCreate"]["apiKey"]["id"]
    stolen = await bob.post("mutation($id: ID!) { apiKeyRevoke(id: $id) { errors { code } } }", {"id": key_id})
    assert stolen["data"]["apiKeyRevoke"]["errors"][0]["code"] == "NOT_FOUND"

    mine = (await alice.post(VIEWER))["data"]["viewer"]
    assert mine["email"] == "alice@example.com"
    assert [k["name"] for k in mine["apiKeys"]] == ["alice app", "x", "alice hooks"]
    assert mine["interests"]
    after_bob = (await bob.post(VIEWER))["data"]["viewer"]
    assert after_bob == before_bob  # nothing Alice did shows up in Bob's account
    assert after_bob["interests"] == [] and after_bob["apiKeys"] == []  # noqa: PT018

    alice_feed = (await alice.run("Feed", first=2))["feed"]
    assert alice_feed["edges"][0]["node"]["rankingSignals"]["readPenalty"] == 0.1  # her own read
    bob_feed = (await bob.run("Feed", first=2))["feed"]
    assert all(e["node"]["rankingSignals"]["readPenalty"] == 1.0 for e in bob_feed["edges"])
    for caller in (bob, gql):
        answer = await caller.post(document("Feed"), {"after": alice_feed["pageInfo"]["endCursor"]})
        assert answer["errors"][0]["extensions"]["code"] == "BAD_CURSOR"


async def _world(services: Services, settings: Settings) -> dict[str, Any]:
    outlet = await add_source(services, settings, "outlet")
    story, articles = await add_story(services, StorySpec("Only story", [outlet], topics=["sports"]))
    return {"source": global_id("Source", outlet), "article": global_id("Article", articles[0]),
            "story": global_id("Story", story)}  # fmt: skip


async def test_checked_credentials_are_reused_briefly_and_forgotten_on_sign_out(
    services: Services, settings: Settings
) -> None:
    caching = dataclasses.replace(services, settings=settings.model_copy(update={"auth_cache_seconds": 300}))
    app = create_app(caching.settings, caching)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as http:
        token = await sign_up(GraphQLClient(http), "c@example.com")
        ask = GraphQLClient(http, token).post
        assert (await ask("{ viewer { email } }"))["data"]["viewer"] == {"email": "c@example.com"}
        async with services.db.begin() as session:  # revoked behind this process's back
            await session.execute(update(UserSession).values(revoked_at=func.now()))
        assert (await ask("{ viewer { email } }"))["data"]["viewer"] is not None  # still within its seconds
        await ask("mutation { logOut { revoked } }")
        assert (await ask("{ viewer { email } }"))["data"]["viewer"] is None  # forgotten at once


async def test_signing_out_ends_what_an_open_websocket_may_do(api_url: str, gql: GraphQLClient) -> None:
    token = await sign_up(gql, "d@example.com")
    url = api_url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"

        async def viewer(operation: str) -> Any:
            await ws.send(json.dumps({"id": operation, "type": "subscribe", "payload": {"query": VIEWER}}))
            while (message := json.loads(await asyncio.wait_for(ws.recv(), 10)))["type"] != "next":
                pass
            return message["payload"]["data"]["viewer"]

        assert (await viewer("before"))["email"] == "d@example.com"
        assert (await gql.as_(token).post("mutation { logOut { revoked } }"))["data"]["logOut"]["revoked"] == 1
        assert await viewer("after") is None  # the socket is still open; its credential is not good any more


async def test_a_dead_session_token_cannot_end_the_live_ones(gql: GraphQLClient) -> None:
    old = await sign_up(gql, "e@example.com")
    await gql.as_(old).post("mutation { logOut { revoked } }")
    live = (await log_in(gql, "e@example.com"))["token"]
    leaked = await gql.as_(old).post("mutation { logOut(everywhere: true) { revoked } }")
    assert leaked["data"]["logOut"]["revoked"] == 0
    assert (await gql.as_(live).post(VIEWER))["data"]["viewer"]["email"] == "e@example.com"
