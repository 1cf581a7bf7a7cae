"""Article text: extraction from pages made by code, hostile pages, the fetch job through the fetcher against a
loopback server (SSRF, robots.txt, size cap), a feed's content:encoded used without a fetch, the GraphQL fields, and
the extractor measured on the shared benchmark pages."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import tracemalloc
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pytest
from sqlalchemy import select

from app.articles.models import Article
from app.entities.models import ArticleEntity
from app.extraction.evaluation import evaluate
from app.extraction.extractor import extract_article
from app.extraction.metric import scores, shingle_matching
from app.extraction.models import ArticleText
from app.extraction.sanitize import safe_html
from app.extraction.service import fetch_article_text
from app.ingest.fetch import new_http_client
from app.ingest.parse import TextLimits, parse_feed
from app.ingest.politeness import Politeness
from app.queue_names import CRAWL_TICK
from app.services import Services
from app.settings import Settings
from app.sources.models import Source
from jobs.worker import ArticleWorker, create_worker
from tests.conftest import GraphQLClient, newsagg, statements_per_page
from tests.feeds import FeedServer, Item, Reply, rss
from tests.newsroom import administrator, global_id
from tests.pages import BOILERPLATE_WORDS, article_page, paragraphs
from tests.test_compressed_bodies import brotli_bomb
from tests.test_ingest import add_source

Run = Callable[[], Coroutine[Any, Any, int]]
HOSTILE = (
    '<p onclick="steal()">Click <a href="javascript:alert(1)">here</a> <script>alert(2)</script>'
    '<img src="x" onerror="alert(3)"><iframe src="https://evil.example/"></iframe>'
    '<style>body{display:none}</style><a href="https://example.org/more" onmouseover="x()">more</a></p>'
)
NO_ARTICLE = (
    b"<html><body><nav><a href=/>Home</a> <a href=/w>World</a></nav>"
    b"<footer>Copyright 2026 Daily Test. Terms. Privacy.</footer></body></html>"
)


def test_a_generated_page_gives_its_article_and_not_its_boilerplate() -> None:
    found = extract_article(article_page(), "https://news.example.org/harbour")

    assert found is not None
    for paragraph in paragraphs(8):
        assert paragraph in found.text
    assert not any(word in found.text for word in BOILERPLATE_WORDS)
    assert found.title == "Council votes to rebuild the harbour wall"
    assert found.author == "Ada Lovelace"
    assert found.published_at is not None
    assert found.published_at.date().isoformat() == "2026-11-20"
    assert found.image == "https://cdn.example.org/harbour.jpg"
    assert found.language == "en"
    assert found.word_count > 250


def test_scripts_and_event_handlers_in_the_article_are_sanitized_away() -> None:
    found = extract_article(article_page(extra_body_html=HOSTILE), "https://news.example.org/harbour")

    assert found is not None
    lowered = found.html.lower()
    for dangerous in ("<script", "onclick", "onerror", "onmouseover", "javascript:", "<iframe", "<style", "alert("):
        assert dangerous not in lowered, dangerous
    assert "<p>" in found.html
    assert "Paragraph 3" in found.html
    assert "alert" not in found.text


def test_the_sanitizer_keeps_text_markup_and_http_links_only() -> None:
    cleaned = safe_html(HOSTILE + '<h2 style="x">Sub</h2><ul><li>one</li></ul><a href="data:text/html,x">d</a>')

    assert '<a href="https://example.org/more" rel="noopener noreferrer nofollow">more</a>' in cleaned
    assert "<h2>Sub</h2>" in cleaned
    assert "<li>one</li>" in cleaned
    assert "data:" not in cleaned
    assert "style" not in cleaned
    assert "<script" not in cleaned


def test_hostile_pages_give_no_article_rather_than_an_error() -> None:
    deep = b"<html><body>" + b"<div>" * 50_000 + b"<p>deep</p>" + b"</div>" * 50_000 + b"</body></html>"
    assert extract_article(deep) is None
    for junk in (b"", b"\x00\xff" * 1000, b"{}", b"<html></html>", "<p>é</p>".encode("utf-16")):
        assert extract_article(junk) is None


def test_the_metric_is_the_benchmarks() -> None:
    """Shingles of 4 words as evaluate.py counts them: per page normalized, averaged, F1 from the averages."""
    body = "one two three four five six"
    assert shingle_matching(body, body) == (1.0, 0.0, 0.0)
    assert shingle_matching(body, "") == (0.0, 0.0, 1.0)
    assert shingle_matching("a b", "a b") == (1.0, 0.0, 0.0)  # fewer than 4 words: one shorter shingle
    tp, fp, fn = shingle_matching(body, "one two three four")  # 1 of 3 true shingles found, nothing wrong
    assert (tp, fp, fn) == pytest.approx((1 / 3, 0.0, 2 / 3))
    result = scores([(1 / 3, 0.0, 2 / 3), (0.0, 0.0, 1.0)])
    assert result["precision"] == pytest.approx(1.0)  # the empty prediction has tp + fp = 0: left out
    assert result["recall"] == pytest.approx(1 / 6)
    assert result["f1"] == pytest.approx(2 * (1 / 6) / (1 + 1 / 6))


def test_the_extractor_on_the_benchmark_pages(shared_data: Path) -> None:
    folder = shared_data / "articles"
    if not (folder / "ground-truth.json").is_file():
        pytest.skip(f"{folder} has no ground-truth.json")

    result = evaluate(folder)

    measured = result["trafilatura"]
    assert isinstance(measured, dict)
    assert measured["f1"] >= 0.95, measured
    assert measured["empty_pages"] == 0, measured


def summary_feed(server: FeedServer, n: int) -> bytes:
    return rss([Item(title=f"Harbour story {k}", link=server.url(f"/news/{k}"), guid=f"h-{k}",
                     summary="Council votes on the harbour wall.") for k in range(n)])  # fmt: skip


def publish(feed_server: FeedServer, n: int) -> str:
    """A summary-only feed of `n` entries and their pages; the feed's URL."""
    feed_server.routes["/feed.xml"] = Reply(200, summary_feed(feed_server, n), {"Content-Type": "application/rss+xml"})
    for k in range(n):
        feed_server.routes[f"/news/{k}"] = Reply(200, article_page(f"Harbour story {k}"), {"Content-Type": "text/html"})
    return feed_server.url("/feed.xml")


async def texts(services: Services) -> dict[str, ArticleText]:
    async with services.db() as session:
        rows = await session.execute(select(Article.url, ArticleText).join(ArticleText))
        return {row[0]: row[1] for row in rows.all()}


async def test_a_summary_feeds_articles_get_their_page_text_through_the_fetcher(
    gql: GraphQLClient, services: Services, feed_server: FeedServer, crawl: Run, fetch_texts: Run
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/feed.xml"] = Reply(200, summary_feed(feed_server, 3), {"Content-Type": "application/rss+xml"})
    for k in range(3):
        mayor = ("Anne Hidalgo", "Sadiq Khan", "Ada Colau")[k]
        page = article_page(f"Harbour story {k}", [f"Mayor {mayor} spoke.", *paragraphs(6, f"pier {k}")])
        feed_server.routes[f"/news/{k}"] = Reply(200, page, {"Content-Type": "text/html", "ETag": f'"p{k}"'})
    await add_source(admin, feed_server.url("/feed.xml"))

    await crawl()
    assert await texts(services) == {}  # crawling never waits for pages
    assert await fetch_texts() >= 3  # one job per article, and a follow-up for each politeness wait

    stored = await texts(services)
    assert sorted(stored) == sorted(feed_server.url(f"/news/{k}") for k in range(3))
    one = stored[feed_server.url("/news/1")]
    assert one.origin == "page"
    assert one.error_class is None
    assert one.etag == '"p1"'
    assert "Paragraph 5 of the report on the pier 1" in one.text
    assert feed_server.hits["/robots.txt"] == 1  # politeness asked robots.txt, once for the host
    async with services.db() as session:
        named = set(await session.scalars(select(ArticleEntity.name)))
    assert {"Anne Hidalgo", "Sadiq Khan", "Ada Colau"} <= named  # named in the page text's opening only
    data = await gql.run("ArticleText", id=global_id("Article", one.article_id))
    article = data["article"]
    assert article["image"] == "https://cdn.example.org/harbour.jpg"
    assert article["readingTimeMinutes"] == 1
    assert article["text"]["origin"] == "PAGE"
    assert article["text"]["author"] == "Ada Lovelace"
    assert article["text"]["plain"] == one.text
    assert article["text"]["html"].startswith("<h1>")
    assert article["text"]["wordCount"] == len(one.text.split())


async def test_content_encoded_full_text_is_used_without_fetching_the_page(
    gql: GraphQLClient, services: Services, feed_server: FeedServer, crawl: Run, fetch_texts: Run
) -> None:
    admin = await administrator(gql, services)
    full = "<p>Mayor Anne Hidalgo opened the new harbour wall.</p>" + "".join(f"<p>{p}</p>" for p in paragraphs(6))
    full += HOSTILE
    feed = rss([Item(title="Harbour", link=feed_server.url("/news/full"), guid="full", summary="Short teaser.")])
    feed = feed.replace(b"</item>", f"<content:encoded>{escape(full)}</content:encoded></item>".encode()).replace(
        b'<rss version="2.0">', b'<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/">'
    )
    feed_server.routes["/full.xml"] = Reply(200, feed, {"Content-Type": "application/rss+xml"})
    feed_server.routes["/news/full"] = Reply(200, article_page())
    await add_source(admin, feed_server.url("/full.xml"))

    await crawl()
    assert await fetch_texts() == 0

    stored = await texts(services)
    text = stored[feed_server.url("/news/full")]
    assert text.origin == "feed"
    assert "Paragraph 5 of the report on the harbour" in text.text
    assert "onclick" not in text.html
    assert "<script" not in text.html
    assert "<p>Paragraph 0" in text.html
    assert "/news/full" not in feed_server.hits
    async with services.db() as session:
        named = set(await session.scalars(select(ArticleEntity.name)))
    assert "Anne Hidalgo" in named  # entities read the text's opening, not only the teaser
    data = await gql.run("ArticleText", id=global_id("Article", text.article_id))
    assert data["article"]["text"]["origin"] == "FEED"
    assert data["article"]["image"] is None


async def test_a_source_can_turn_page_fetching_off(
    gql: GraphQLClient, services: Services, feed_server: FeedServer, crawl: Run, fetch_texts: Run
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/feed.xml"] = Reply(200, summary_feed(feed_server, 2), {"Content-Type": "application/rss+xml"})
    created = await add_source(admin, feed_server.url("/feed.xml"))
    update = await admin.run("SourceUpdate", id=created["source"]["id"], input={"articleText": False})
    assert update["sourceUpdate"]["source"]["articleText"] is False

    await crawl()

    assert await fetch_texts() == 0
    assert "/news/0" not in feed_server.hits


async def fetch_one(services: Services, settings: Settings, url: str) -> Any:
    """Store an article of `url` and run its fetch job's service once with `settings`."""
    async with services.db.begin() as session:
        source = await session.scalar(select(Source.id).limit(1))
        assert source is not None
        article = Article(source_id=source, external_id=url, url=url, title="T", summary="", published_at=_now(),
                          content_hash=1)  # fmt: skip
        session.add(article)
        await session.flush()
        article_id = article.id
    async with new_http_client(settings) as http:
        politeness = Politeness(services.redis, http, settings)
        return await fetch_article_text(services.engine, http, politeness, settings, article_id)


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


@pytest.mark.parametrize("url", ["http://127.0.0.1:{port}/news/0", "http://10.0.0.1/news", "http://[::1]:{port}/x",
                                 "http://169.254.169.254/latest/meta-data"])  # fmt: skip
async def test_a_page_on_a_private_address_is_refused(
    url: str, gql: GraphQLClient, services: Services, settings: Settings, feed_server: FeedServer, crawl: Run
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/feed.xml"] = Reply(200, rss([]), {"Content-Type": "application/rss+xml"})
    feed_server.routes["/news/0"] = Reply(200, article_page())
    await add_source(admin, feed_server.url("/feed.xml"))
    port = feed_server.url("/").split(":")[-1].split("/")[0]
    strict = settings.model_copy(update={"allow_loopback_sources": False, "fetch_timeout_seconds": 2})

    outcome = await fetch_one(services, strict, url.format(port=port))

    assert (outcome.status, outcome.error_class) == ("failed", "address_refused")
    assert "/news/0" not in feed_server.hits
    (stored,) = (await texts(services)).values()
    assert stored.error_class == "address_refused"
    assert stored.text == ""


async def test_robots_txt_too_large_pages_and_pages_without_an_article(
    gql: GraphQLClient, services: Services, settings: Settings, feed_server: FeedServer
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/feed.xml"] = Reply(200, rss([]), {"Content-Type": "application/rss+xml"})
    feed_server.routes["/robots.txt"] = Reply(200, b"User-agent: *\nDisallow: /private/\n")
    feed_server.routes["/huge"] = Reply(200, article_page(body=paragraphs(30_000)))
    feed_server.routes["/empty"] = Reply(200, NO_ARTICLE)
    feed_server.routes["/gone"] = Reply(404, b"")
    await add_source(admin, feed_server.url("/feed.xml"))
    small = settings.model_copy(update={"article_max_bytes": 1024 * 1024})

    outcomes = [await fetch_one(services, small, feed_server.url(path)) for path in
                ("/private/a", "/huge", "/empty", "/gone")]  # fmt: skip

    assert [(o.status, o.error_class) for o in outcomes] == [
        ("failed", "robots_disallowed"),
        ("failed", "too_large"),
        ("empty", "empty"),
        ("failed", "http_status"),
    ]
    assert "/private/a" not in feed_server.hits
    assert all(not t.text for t in (await texts(services)).values())
    data = await admin.run("ArticleText", id=global_id("Article", outcomes[2].article_id))
    assert data["article"]["text"] is None
    assert data["article"]["readingTimeMinutes"] is None


async def test_compressed_bombs_and_stacked_codings_in_article_pages(
    gql: GraphQLClient, services: Services, settings: Settings, feed_server: FeedServer
) -> None:
    admin = await administrator(gql, services)
    feed_server.routes["/feed.xml"] = Reply(200, rss([]), {"Content-Type": "application/rss+xml"})
    feed_server.routes["/bomb"] = Reply(200, brotli_bomb(), {"Content-Encoding": "br"})  # 256 MiB in ~400 bytes
    feed_server.routes["/stacked"] = Reply(200, gzip.compress(gzip.compress(article_page())),
                                           {"Content-Encoding": "gzip, gzip"})  # fmt: skip
    await add_source(admin, feed_server.url("/feed.xml"))

    tracemalloc.start()
    try:
        bomb = await fetch_one(services, settings, feed_server.url("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    stacked = await fetch_one(services, settings, feed_server.url("/stacked"))

    assert (bomb.status, bomb.error_class) == ("failed", "too_large")
    assert peak < 32 * 1024 * 1024, f"peak {peak / 1024 / 1024:.0f} MiB"
    assert (stacked.status, stacked.error_class) == ("failed", "unsupported_encoding")


async def test_a_worker_process_runs_the_article_queue_beside_crawling(
    gql: GraphQLClient, services: Services, settings: Settings, feed_server: FeedServer, arq_redis: Any
) -> None:
    """The production path: `newsagg worker`'s main loop starts the article queue's loop at startup and stops it at
    shutdown; a crawl tick's new articles get their text without any burst worker."""
    admin = await administrator(gql, services)
    await add_source(admin, publish(feed_server, 2))
    worker = create_worker(settings, handle_signals=False, redis_pool=arq_redis, cron_jobs=None)
    running = asyncio.create_task(worker.main())
    try:
        await arq_redis.enqueue_job(CRAWL_TICK, _queue_name=settings.queue_name)
        async with asyncio.timeout(60):
            while len(await texts(services)) < 2:  # noqa: ASYNC110 (the texts are rows in the database)
                await asyncio.sleep(0.1)
        assert isinstance(worker.ctx["article_worker"], ArticleWorker)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await worker.close()
    assert all(t.origin == "page" and t.word_count > 100 for t in (await texts(services)).values())


def test_eval_extraction_prints_the_benchmarks_figures_as_json(tmp_path: Path) -> None:
    """`newsagg eval extraction` on a folder laid out as the benchmark's: one page found, one left empty."""
    (tmp_path / "html").mkdir()
    truth = {"good": " ".join(paragraphs(8)), "bare": "A body the page does not hold at all."}
    (tmp_path / "html" / "good.html.gz").write_bytes(gzip.compress(article_page()))
    (tmp_path / "html" / "bare.html.gz").write_bytes(gzip.compress(NO_ARTICLE))
    (tmp_path / "ground-truth.json").write_text(
        json.dumps({k: {"articleBody": v, "url": None} for k, v in truth.items()})
    )

    done = newsagg("eval", "extraction", "--dir", str(tmp_path))

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    measured = result["trafilatura"]
    assert result["pages"] == 2
    assert measured["empty"] == ["bare"]
    assert measured["precision"] > 0.9  # the empty page counts in recall only, as in evaluate.py
    assert measured["recall"] == pytest.approx(0.5, abs=0.02)


def test_a_json_feeds_content_html_is_an_entrys_full_content() -> None:
    body = json.dumps({"version": "https://jsonfeed.org/version/1.1", "title": "J", "items": [
        {"id": "1", "url": "https://example.org/1", "title": "One", "summary": "Teaser.",
         "content_html": "<p>" + " ".join(paragraphs(3)) + "</p>"}]}).encode()  # fmt: skip

    parsed = parse_feed(body, feed_url="https://example.org/feed.json", content_type="application/feed+json",
                        fetched_at=_now(), limits=TextLimits(500, 300))  # fmt: skip

    (entry,) = parsed.entries
    assert entry.summary == "Teaser."
    assert entry.content is not None
    assert entry.content.startswith("<p>Paragraph 0")


ARTICLES_WITH_TEXT = "query($n: Int) { articles(first: $n) { edges { node { title image readingTimeMinutes " \
    "text { plain wordCount } } } } }"  # fmt: skip


async def test_article_texts_are_loaded_in_one_batch_whatever_the_page_size(
    gql: GraphQLClient, services: Services, feed_server: FeedServer, crawl: Run, fetch_texts: Run
) -> None:
    admin = await administrator(gql, services)
    await add_source(admin, publish(feed_server, 6))
    await crawl()
    await fetch_texts()

    counts = await statements_per_page(gql, services, ARTICLES_WITH_TEXT, (1, 6))

    assert counts[0] == counts[1]
    page = await gql.post(ARTICLES_WITH_TEXT, {"n": 6})
    assert all(edge["node"]["text"]["wordCount"] > 100 for edge in page["data"]["articles"]["edges"])
