"""Real hostile input through the real parse-and-store path: feedparser's own edge-case corpus and the broken
snapshots of real news feeds. No crash, no hang, and every entry feedparser can see is stored exactly once."""

from __future__ import annotations

import json
import tarfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import feedparser
import pytest
from sqlalchemy import delete, func, select

from app.articles import repository as articles
from app.articles.models import Article
from app.ingest.jsonfeed import looks_like_json, read_json_feed
from app.ingest.parse import FeedParseError, TextLimits, parse_feed, strip_doctype
from app.ingest.refresh import article_rows
from app.ingest.urls import InvalidUrl, normalize_url
from app.services import Services
from app.sources import repository as sources

NOW = datetime(2026, 11, 21, tzinfo=UTC)
FEED_URL = "http://feeds.example.org/feed.xml"


def entries_feedparser_sees(body: bytes) -> int:
    """Entries with a usable link or an id, counted once per URL (or per id when there is no link)."""
    if looks_like_json(body, None):
        try:
            _, raw_entries = read_json_feed(body)
        except ValueError:
            return 0
    else:
        raw_entries = feedparser.parse(strip_doctype(body), response_headers={"content-location": FEED_URL}).entries
    keys = set()
    for raw in raw_entries:
        try:
            url: str | None = normalize_url(raw.get("link") or "", base=FEED_URL) if raw.get("link") else None
        except InvalidUrl:
            url = None
        guid = str(raw.get("id") or "").strip()
        if url or guid:
            keys.add(url or f"id:{guid}")
    return len(keys)


async def store(services: Services, name: str, body: bytes) -> int | None:
    """Parse and insert as a refresh does; None when the body is not a feed (a clear, counted error)."""
    try:
        parsed = parse_feed(body, feed_url=FEED_URL, content_type=None, fetched_at=NOW, limits=TextLimits(500, 1000))
    except FeedParseError:
        return None
    async with services.db.begin() as session:
        source = await sources.insert_source(session, sources.NewSource(
            feed_url=f"http://corpus.example/{name}", name=name, site_url=None, category=None, language=None,
            authority=0.5, min_interval_s=60, max_interval_s=900))  # fmt: skip
        assert source is not None
        await articles.insert_new(session, article_rows(source.id, parsed.entries))
        stored = await session.scalar(select(func.count()).select_from(Article).where(Article.source_id == source.id))
        await session.execute(delete(Article))  # URLs are unique across sources; corpus files share example.com
    return int(stored or 0)


async def check_all(services: Services, bodies: list[tuple[str, bytes]]) -> dict[str, Any]:
    counts = {"files": 0, "stored": 0, "not_a_feed": 0}
    mismatches = []
    for name, body in bodies:
        counts["files"] += 1
        stored = await store(services, name, body)
        expected = entries_feedparser_sees(body)
        if stored is None:
            counts["not_a_feed"] += 1
            if expected:
                mismatches.append((name, expected, "refused"))
            continue
        counts["stored"] += stored
        if stored != expected:
            mismatches.append((name, expected, stored))
    assert mismatches == [], mismatches[:20]
    return counts


async def test_feedparser_corpus(services: Services, shared_data: Path) -> None:
    corpus = shared_data / "feeds" / "feedparser_tests" / "tests"
    if not corpus.is_dir():
        pytest.skip(f"{corpus} is missing")
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    counts = await check_all(services, [(str(p.relative_to(corpus)), p.read_bytes()) for p in files])
    assert counts["files"] > 2000
    assert counts["stored"] > 100  # most corpus files test feed-level fields and hold no entry


async def test_broken_real_snapshots(services: Services, shared_data: Path) -> None:
    feeds = shared_data / "feeds"
    manifest = feeds / "gesab001_headlines_unparseable.jsonl"
    archive = feeds / "gesab001_headlines_all_snapshots.tar.xz"
    if not manifest.exists() or not archive.exists():
        pytest.skip("the broken-snapshot list or the snapshot archive is missing")
    wanted = {json.loads(line)["file"] for line in manifest.read_text().splitlines() if line.strip()}
    bodies = []
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar:
            name = member.name.split("/", 1)[-1]
            if member.isfile() and name in wanted:
                extracted = tar.extractfile(member)
                assert extracted is not None
                bodies.append((name, extracted.read()))
    assert len(bodies) == len(wanted) == 80
    counts = await check_all(services, bodies)
    assert counts["stored"] > 0  # truncated downloads still give up the entries before the break
