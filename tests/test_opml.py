"""OPML import and export, the default sources, and the API's body limit."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from app.services import Services
from app.settings import Settings
from app.sources.models import Source
from app.sources.opml import OpmlError, OpmlFeed, UnsafeXml, read_opml, write_opml
from app.sources.portability import default_sources_opml, import_opml, load_default_sources
from tests.conftest import GraphQLClient, newsagg
from tests.newsroom import administrator

SAMPLE = b"""<?xml version="1.0"?>
<opml version="1.0"><head><title>mine</title></head><body>
  <outline text="Tech">
    <outline text="Wire A" type="rss" xmlUrl="http://127.0.0.1:9/a.xml" htmlUrl="https://a.example/"/>
    <outline text="Nested"><outline text="Wire B" xmlUrl="http://127.0.0.1:9/b.xml?utm_source=opml"/></outline>
  </outline>
  <outline text="Loose" xmlUrl="http://127.0.0.1:9/c.xml" category="world" authority="0.9"/>
  <outline text="Private" xmlUrl="http://10.1.2.3/feed"/>
  <outline text="Junk" xmlUrl="ftp://x/y"/>
</body></opml>"""


async def source_count(services: Services) -> int:
    async with services.db() as session:
        return int(await session.scalar(select(func.count()).select_from(Source)) or 0)


def test_read_and_write_round_trip() -> None:
    feeds = read_opml(SAMPLE)
    assert [(f.title, f.category) for f in feeds[:3]] == [("Wire A", "Tech"), ("Wire B", "Nested"),
                                                          ("Loose", "world")]  # fmt: skip
    assert feeds[2].authority == 0.9
    again = read_opml(write_opml(feeds).encode())
    assert {(f.feed_url, f.category, f.authority) for f in again} == {(f.feed_url, f.category, f.authority)
                                                                      for f in feeds}  # fmt: skip


@pytest.mark.parametrize("document", [b"<html><body/></html>", b"not xml", b"<opml><head/></opml>"])
def test_unreadable_opml(document: bytes) -> None:
    with pytest.raises(OpmlError):
        read_opml(document)


def attack(subset: str, body: str = "<outline text='x' xmlUrl='http://x/'/>", before: str = "") -> bytes:
    return f'<?xml version="1.0"?>{before}<!DOCTYPE opml [{subset}]><opml><body>{body}</body></opml>'.encode()


LAUGHS = '<!ENTITY a0 "lol">' + "".join(f'<!ENTITY a{i} "{("&a" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
XML_ATTACKS = {  # name: (document, what the refusal says)
    "billion laughs": (attack(LAUGHS, "<outline text='&a9;' xmlUrl='http://x/'/>"), "entity 'a0'"),
    "quadratic blowup": (attack(f'<!ENTITY a "{"x" * 50_000}">', "<outline text='" + "&a;" * 50_000 + "'/>"),
                         "entity 'a'"),
    "external entity, file": (attack('<!ENTITY x SYSTEM "file:///etc/passwd">', "<outline text='&x;'/>"),
                              "entity 'x' from file:///etc/passwd"),
    "external entity, http": (attack('<!ENTITY x SYSTEM "http://127.0.0.1:9/x">', "<outline text='&x;'/>"),
                              "entity 'x' from http://127.0.0.1:9/x"),
    "external parameter entity": (attack('<!ENTITY % dtd SYSTEM "http://127.0.0.1:9/evil.dtd"> %dtd;'),
                                  "entity 'dtd' from http://127.0.0.1:9/evil.dtd"),
    "DOCTYPE after a 4 KB comment": (attack(LAUGHS, "<outline text='&a9;'/>", before="<!--" + "c" * 4200 + "-->"),
                                     "entity 'a0'"),
}  # fmt: skip


@pytest.mark.parametrize("name", XML_ATTACKS)
def test_xml_attacks_are_refused_by_name(name: str) -> None:
    document, said = XML_ATTACKS[name]
    with pytest.raises(UnsafeXml, match=f"entity declarations are refused \\({re.escape(said)}"):
        read_opml(document)


def test_a_plain_doctype_is_still_read() -> None:
    document = b'<?xml version="1.0"?><!DOCTYPE opml SYSTEM "http://127.0.0.1:9/opml.dtd">' + SAMPLE.split(b"?>", 1)[1]
    assert len(read_opml(document)) == len(read_opml(SAMPLE))


def test_the_default_list_is_valid() -> None:
    feeds = read_opml(default_sources_opml())
    assert 25 <= len(feeds) <= 40
    assert all(f.feed_url.startswith("https://") and f.category and f.authority for f in feeds)
    assert len({f.feed_url for f in feeds}) == len(feeds)
    categories = {f.category for f in feeds}
    assert categories == {"world", "politics", "business", "technology", "science", "health", "sports",
                          "entertainment"}  # fmt: skip


async def test_import_through_the_api_then_export(gql: GraphQLClient, services: Services) -> None:
    admin = await administrator(gql, services)
    result = (await admin.run("SourcesImport", opml=SAMPLE.decode()))["sourcesImport"]
    assert sorted(s["name"] for s in result["created"]) == ["Loose", "Wire A", "Wire B"]
    assert {e["code"] for e in result["errors"]} == {"ADDRESS_REFUSED", "INVALID_URL"}
    again = (await admin.run("SourcesImport", opml=SAMPLE.decode()))["sourcesImport"]
    assert (again["created"], again["existingCount"]) == ([], 3)
    exported = (await gql.run("SourcesOpml"))["sourcesOpml"]
    assert {f.feed_url for f in read_opml(exported.encode())} == {
        "http://127.0.0.1:9/a.xml", "http://127.0.0.1:9/b.xml", "http://127.0.0.1:9/c.xml"}  # fmt: skip
    broken = (await admin.run("SourcesImport", opml="<nope"))["sourcesImport"]
    assert broken["errors"][0]["code"] == "INVALID"
    bomb = (await admin.run("SourcesImport", opml=XML_ATTACKS["billion laughs"][0].decode()))["sourcesImport"]
    assert (bomb["errors"][0]["code"], bomb["created"]) == ("UNSAFE_XML", [])


async def test_a_lists_free_text_is_tidied_not_refused(services: Services, settings: Settings) -> None:
    folder = "Very long folder name " * 10
    document = f"""<opml version="2.0"><body><outline text="{folder}">
        <outline title="Wire&#10;Desk" xmlUrl="http://127.0.0.1:9/w.xml" language="English"/>
        <outline title="Paper" xmlUrl="http://127.0.0.1:9/p.xml" language="pt-BR"/>
    </outline></body></opml>""".encode()
    async with services.db.begin() as session:
        report = await import_opml(session, settings, document)
    assert report.rejected == []
    assert [(s.name, s.category, s.language) for s in report.created] == [
        ("Wire Desk", folder.strip()[:100].strip(), None),
        ("Paper", folder.strip()[:100].strip(), "pt-br"),
    ]


async def test_default_sources_only_on_an_empty_database(services: Services, settings: Settings) -> None:
    async with services.db.begin() as session:
        added = await load_default_sources(session, settings)
    assert added == await source_count(services) == len(read_opml(default_sources_opml()))
    async with services.db.begin() as session:
        assert await load_default_sources(session, settings) == 0


async def test_cli_import_and_export(services: Services, settings: Settings, tmp_path: Path) -> None:
    (tmp_path / "in.opml").write_bytes(SAMPLE)
    env = {**os.environ, "DATABASE_URL": str(settings.database_url), "NEWSAGG_ALLOW_LOOPBACK_SOURCES": "true"}
    imported = await asyncio.to_thread(newsagg, "opml", "import", str(tmp_path / "in.opml"), env=env)
    assert imported.returncode == 0, imported.stderr
    assert "3 added, 0 already present, 2 refused" in imported.stdout
    exported = await asyncio.to_thread(newsagg, "opml", "export", env=env)
    assert len(read_opml(exported.stdout.encode())) == 3
    (tmp_path / "bomb.opml").write_bytes(XML_ATTACKS["external entity, file"][0])
    refused = await asyncio.to_thread(newsagg, "opml", "import", str(tmp_path / "bomb.opml"), env=env)
    assert refused.returncode == 1
    assert "entity declarations are refused (entity 'x' from file:///etc/passwd)" in refused.stderr
    assert "Traceback" not in refused.stderr


async def test_oversized_request_bodies_are_refused(api_url: str, services: Services, settings: Settings) -> None:
    huge = write_opml([OpmlFeed(feed_url=f"https://x{k}.example/feed") for k in range(30000)])
    assert len(huge) > settings.api_max_body_bytes
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{api_url}/graphql", json={"query": "mutation($o: String!) { sourcesImport("
                                     "opml: $o) { existingCount } }", "variables": {"o": huge}})  # fmt: skip
        assert response.status_code == 413
        assert response.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"

        async def chunks():  # type: ignore[no-untyped-def]
            for _ in range(3):
                yield b"x" * settings.api_max_body_bytes

        streamed = await client.post(f"{api_url}/graphql", content=chunks(),
                                     headers={"content-type": "application/json"})  # fmt: skip
        assert streamed.status_code == 413
    assert await source_count(services) == 0
