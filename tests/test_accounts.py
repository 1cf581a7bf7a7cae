"""Accounts: sign-up and sign-in tokens that expire and can be revoked, API keys, the viewer, the admin role."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select, update

from app.api.asgi import create_app
from app.articles.models import Article
from app.articles.repository import NewArticle, insert_new
from app.feed.versions import version_key as feed_version_key
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.users.models import User, UserInterest, UserSession
from app.users.passwords import hash_password, verify_password
from tests.conftest import GraphQLClient, document, newsagg
from tests.newsroom import PASSWORD, administrator, global_id, log_in, sign_up


def test_passwords_are_salted_scrypt_and_verified_in_constant_time() -> None:
    first, second = hash_password(PASSWORD), hash_password(PASSWORD)
    assert first.startswith("scrypt$")
    assert first != second
    assert verify_password(PASSWORD, first)
    assert not verify_password(PASSWORD + "!", first)
    assert not verify_password(PASSWORD, "not a hash")


async def test_sign_up_log_in_and_the_viewer(gql: GraphQLClient, services: Services) -> None:
    token = await sign_up(gql, "Reader@Example.com")
    assert (await gql.as_(token).run("Viewer"))["viewer"]["email"] == "reader@example.com"
    assert (await gql.run("Viewer"))["viewer"] is None  # anonymous
    again = (await gql.run("SignUp", input={"email": "reader@example.COM", "password": PASSWORD}))["signUp"]
    assert [e["code"] for e in again["errors"]] == ["EMAIL_TAKEN"]
    weak = (await gql.run("SignUp", input={"email": "b@example.com", "password": "short"}))["signUp"]
    assert [(e["code"], e["field"]) for e in weak["errors"]] == [("WEAK_PASSWORD", "password")]
    bad = (await gql.run("SignUp", input={"email": "not-an-email", "password": PASSWORD}))["signUp"]
    assert [e["code"] for e in bad["errors"]] == ["INVALID_EMAIL"]
    wrong = await log_in(gql, "reader@example.com", "wrong password")
    unknown = await log_in(gql, "nobody@example.com")
    assert wrong["errors"] == unknown["errors"]  # nothing says which accounts exist
    assert wrong["token"] is None
    second = await log_in(gql, "READER@example.com")
    assert second["token"]
    assert second["token"] != token
    async with services.db() as session:
        stored = list(await session.scalars(select(UserSession.token_hash)))
    assert token not in stored
    assert len(stored) == 2


async def test_tokens_are_revoked_by_log_out_and_expire(gql: GraphQLClient, services: Services) -> None:
    token = await sign_up(gql)
    other = (await log_in(gql, "reader@example.com"))["token"]
    assert (await gql.as_(token).run("LogOut"))["logOut"]["revoked"] == 1
    assert (await gql.as_(token).run("Viewer"))["viewer"] is None
    assert (await gql.as_(other).run("Viewer"))["viewer"] is not None  # another session goes on
    async with services.db.begin() as session:
        await session.execute(update(UserSession).values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
    assert (await gql.as_(other).run("Viewer"))["viewer"] is None
    third = (await log_in(gql, "reader@example.com"))["token"]
    await log_in(gql.as_(other), "reader@example.com")
    # every session still open: the expired one, this one and the last sign-in
    assert (await gql.as_(third).run("LogOut", everywhere=True))["logOut"]["revoked"] == 3


async def test_api_keys_authenticate_apps_until_revoked(gql: GraphQLClient, services: Services) -> None:
    token = await sign_up(gql)
    created = (await gql.as_(token).post(document("ApiKeyCreate"), {"name": "breaking-news app"}))["data"][
        "apiKeyCreate"
    ]
    key = created["key"]
    assert key.startswith("nak_")
    viewer = (await gql.as_(key).run("Viewer"))["viewer"]
    assert viewer["email"] == "reader@example.com"
    assert viewer["apiKeys"][0]["name"] == "breaking-news app"
    assert viewer["apiKeys"][0]["lastUsedAt"] is not None
    intruder = await sign_up(gql, "intruder@example.com")  # another user cannot revoke it
    refused = (await gql.as_(intruder).run("ApiKeyRevoke", id=created["apiKey"]["id"]))["apiKeyRevoke"]
    assert [e["code"] for e in refused["errors"]] == ["NOT_FOUND"]
    revoked = (await gql.as_(token).run("ApiKeyRevoke", id=created["apiKey"]["id"]))["apiKeyRevoke"]
    assert revoked["apiKey"]["revokedAt"] is not None
    assert (await gql.as_(key).run("Viewer"))["viewer"] is None
    nobody = await gql.post(document("ApiKeyCreate"), {"name": "x"})
    assert nobody["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_bad_authorization_header_is_anonymous_not_an_error(gql: GraphQLClient, services: Services) -> None:
    for value in ("Bearer nas_forged", "Basic dXNlcjpwYXNz", "nak_forged"):
        body = await gql.post("{ viewer { email } articles(first: 1) { edges { cursor } } }",
                              headers={"Authorization": value})  # fmt: skip
        response = await gql.http.post("/graphql", json={"query": "{ viewer { email } }"},
                                       headers={"Authorization": value})  # fmt: skip
        assert response.json() == {"data": {"viewer": None}}
        assert body["data"]["viewer"] is None


async def test_only_administrators_manage_sources_when_the_service_is_closed(
    services: Services, settings: Settings
) -> None:
    closed = settings.model_copy(update={"open_source_admin": False})
    transport = httpx.ASGITransport(create_app(closed, dataclasses.replace(services, settings=closed)))
    async with httpx.AsyncClient(transport=transport, base_url="http://closed") as http:
        gql = GraphQLClient(http)
        create: dict[str, Any] = {"input": {"feedUrl": "http://127.0.0.1:9/admin.xml"}}
        anonymous = (await gql.run("SourceCreate", **create))["sourceCreate"]
        assert [e["code"] for e in anonymous["errors"]] == ["FORBIDDEN"]
        token = await sign_up(gql, "editor@example.com")
        user = (await gql.as_(token).run("SourceCreate", **create))["sourceCreate"]
        assert [e["code"] for e in user["errors"]] == ["FORBIDDEN"]
        async with services.db.begin() as session:
            await session.execute(update(User).values(is_admin=True))
        admin = (await gql.as_(token).run("SourceCreate", **create))["sourceCreate"]
        assert admin["errors"] == []
        assert admin["source"]["feedUrl"] == "http://127.0.0.1:9/admin.xml"


def test_grant_admin_command_refuses_an_unknown_account(settings: Settings) -> None:
    run = newsagg("users", "grant-admin", "nobody@example.com",
                  env={"PATH": "/usr/bin:/bin", "DATABASE_URL": str(settings.database_url)})  # fmt: skip
    assert run.returncode == 1
    assert "no account" in run.stderr


async def test_follows_mutes_and_languages_are_each_readers_own(gql: GraphQLClient, services: Services) -> None:
    admin = await administrator(gql, services)
    source = await admin.run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/wire.xml", "name": "Wire"})
    source_id = source["sourceCreate"]["source"]["id"]
    reader, other = gql.as_(await sign_up(gql)), gql.as_(await sign_up(gql, "other@example.com"))
    for _ in range(2):  # idempotent
        await reader.run("TopicFollow", topic="SPORTS")
    await reader.run("SourceMute", sourceId=source_id)
    languages = await reader.run("PreferredLanguagesSet", languages=["FR", "en", "fr"])
    assert languages["preferredLanguagesSet"]["viewer"]["preferredLanguages"] == ["fr", "en"]
    mine = (await reader.run("Preferences"))["viewer"]
    assert (mine["followedTopics"], [s["name"] for s in mine["mutedSources"]]) == (["SPORTS"], ["Wire"])
    theirs = (await other.run("Preferences"))["viewer"]  # another reader sees only their own (empty) choices
    assert (theirs["followedTopics"], theirs["mutedSources"], theirs["preferredLanguages"]) == ([], [], [])
    assert (await gql.as_(None).run("Preferences"))["viewer"] is None
    for name, variables in (("TopicFollow", {"topic": "SPORTS"}), ("SourceMute", {"sourceId": source_id}),
                            ("PreferredLanguagesSet", {"languages": ["en"]})):  # fmt: skip
        anonymous = await gql.as_(None).post(document(name), variables)
        assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    unknown = global_id("Source", 999999)
    missing = (await reader.run("SourceMute", sourceId=unknown))["sourceMute"]
    assert [e["code"] for e in missing["errors"]] == ["NOT_FOUND"]
    # refused in the payload, as other account mutations refuse, and nothing changed
    for languages in (["english please"], ["en"] * 21, ["\u00e9n"], ["en", ""]):
        bad = (await reader.run("PreferredLanguagesSet", languages=languages))["preferredLanguagesSet"]
        assert (bad["viewer"], [(e["code"], e["field"]) for e in bad["errors"]]) == (
            None, [("INVALID_LANGUAGE", "languages")]), bad  # fmt: skip
    assert (await reader.run("Preferences"))["viewer"]["preferredLanguages"] == ["fr", "en"]


async def test_engagement_moves_interests_once_per_session(gql: GraphQLClient, services: Services,
                                                           settings: Settings) -> None:  # fmt: skip
    async with services.db.begin() as session:
        source = await create_source(session, settings, SourceRequest(feed_url="http://127.0.0.1:9/e.xml"))
        [sports, business, unknown] = await insert_new(session, [
            NewArticle(source.id, f"e{k}", f"https://e.example/{k}", f"story {k}", "", None, datetime.now(UTC), k)
            for k in range(3)])  # fmt: skip
        await session.execute(update(Article).where(Article.id == sports.id).values(topics=["sports"]))
        await session.execute(update(Article).where(Article.id == business.id).values(topics=["business"]))
    reader = gql.as_(await sign_up(gql))
    sports_id, business_id = (global_id("Article", a.id) for a in (sports, business))
    async with services.db() as session:
        user_id = await session.scalar(select(User.id).where(User.email == "reader@example.com"))
    assert user_id is not None
    version = await services.redis.get(feed_version_key(user_id)) or b"0"

    async def engage(article: str, action: str, session_id: str = "s1", dwell: int | None = None) -> dict[str, Any]:
        variables = {"articleId": article, "action": action, "sessionId": session_id, "dwellMs": dwell}
        data: dict[str, Any] = (await reader.run("EngagementRecord", **variables))["engagementRecord"]
        return data

    first = await engage(sports_id, "CLICK")
    assert first["recorded"] is True
    assert first["interests"] == [{"topic": "SPORTS", "weight": 0.1}]
    assert (await engage(sports_id, "CLICK"))["recorded"] is False  # the same session: once
    assert (await engage(sports_id, "CLICK", "s2"))["interests"] == [{"topic": "SPORTS", "weight": 0.19}]
    dismissed = await engage(business_id, "DISMISS", "s2")
    assert {w["topic"]: w["weight"] for w in dismissed["interests"]} == {"SPORTS": 0.171, "BUSINESS": -0.1}
    unread = await engage(global_id("Article", unknown.id), "READ", "s2", 60_000)  # no topic (another language)
    assert unread["recorded"] is True
    assert {w["topic"]: w["weight"] for w in unread["interests"]} == {"SPORTS": 0.171, "BUSINESS": -0.1}
    assert int(await services.redis.get(feed_version_key(user_id)) or 0) > int(version)  # cached feed pages invalidated
    async with services.db.begin() as session:  # ten days later, the learned weights have decayed
        await session.execute(update(UserInterest).values(updated_at=UserInterest.updated_at - timedelta(days=10)))
    weights = {w["topic"]: w["weight"] for w in (await reader.run("Preferences"))["viewer"]["interests"]}
    assert weights["SPORTS"] == round(0.171 * 0.95**10, 6)
    await reader.run("TopicFollow", topic="BUSINESS")  # an explicit follow outweighs a dismissal
    weights = {w["topic"]: w["weight"] for w in (await reader.run("Preferences"))["viewer"]["interests"]}
    assert weights["BUSINESS"] == 1.0
    missing = global_id("Article", 999999)
    assert [e["code"] for e in (await engage(missing, "READ"))["errors"]] == ["NOT_FOUND"]
    anonymous = await gql.as_(None).post(document("EngagementRecord"),
                                         {"articleId": sports_id, "action": "READ", "sessionId": "s"})  # fmt: skip
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    too_long = await reader.post(document("EngagementRecord"),
                                 {"articleId": sports_id, "action": "READ", "sessionId": "x" * 65})  # fmt: skip
    assert too_long["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
