"""Accounts: sign-up and sign-in tokens that expire and can be revoked, API keys, the viewer, the admin role."""

from __future__ import annotations

import base64
import dataclasses
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select, update

from app.api.asgi import create_app
from app.services import Services
from app.settings import Settings
from app.users.models import User, UserSession
from app.users.passwords import hash_password, verify_password
from tests.conftest import REPO, GraphQLClient, document

PASSWORD = "correct horse battery"


async def sign_up(gql: GraphQLClient, email: str = "reader@example.com") -> str:
    data = (await gql.run("SignUp", input={"email": email, "password": PASSWORD}))["signUp"]
    assert data["errors"] == []
    token: str = data["token"]
    return token


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
    wrong = (await gql.run("LogIn", input={"email": "reader@example.com", "password": "wrong password"}))["logIn"]
    unknown = (await gql.run("LogIn", input={"email": "nobody@example.com", "password": PASSWORD}))["logIn"]
    assert wrong["errors"] == unknown["errors"]  # nothing says which accounts exist
    assert wrong["token"] is None
    second = (await gql.run("LogIn", input={"email": "READER@example.com", "password": PASSWORD}))["logIn"]
    assert second["token"]
    assert second["token"] != token
    async with services.db() as session:
        stored = list(await session.scalars(select(UserSession.token_hash)))
    assert token not in stored
    assert len(stored) == 2


async def test_tokens_are_revoked_by_log_out_and_expire(gql: GraphQLClient, services: Services) -> None:
    token = await sign_up(gql)
    other = (await gql.run("LogIn", input={"email": "reader@example.com", "password": PASSWORD}))["logIn"]["token"]
    assert (await gql.as_(token).run("LogOut"))["logOut"]["revoked"] == 1
    assert (await gql.as_(token).run("Viewer"))["viewer"] is None
    assert (await gql.as_(other).run("Viewer"))["viewer"] is not None  # another session goes on
    async with services.db.begin() as session:
        await session.execute(update(UserSession).values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
    assert (await gql.as_(other).run("Viewer"))["viewer"] is None
    third = (await gql.run("LogIn", input={"email": "reader@example.com", "password": PASSWORD}))["logIn"]["token"]
    await gql.as_(other).run("LogIn", input={"email": "reader@example.com", "password": PASSWORD})
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
        body = await gql.as_(None).post("{ viewer { email } articles(first: 1) { edges { cursor } } }")
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
        gql = GraphQLClient.__new__(GraphQLClient)
        gql.http, gql.token = http, None
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
    run = subprocess.run([sys.executable, "-m", "app", "users", "grant-admin", "nobody@example.com"], cwd=REPO,
                         capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "DATABASE_URL": str(settings.database_url)})  # fmt: skip
    assert run.returncode == 1
    assert "no account" in run.stderr


async def test_follows_mutes_and_languages_are_each_readers_own(gql: GraphQLClient, services: Services) -> None:
    source = await gql.run("SourceCreate", input={"feedUrl": "http://127.0.0.1:9/wire.xml", "name": "Wire"})
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
    unknown = base64.b64encode(b"Source:999999").decode()
    missing = (await reader.run("SourceMute", sourceId=unknown))["sourceMute"]
    assert [e["code"] for e in missing["errors"]] == ["NOT_FOUND"]
    bad = await reader.post(document("PreferredLanguagesSet"), {"languages": ["english please"]})
    assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
