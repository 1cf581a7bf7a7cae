"""Compressed bodies from a real loopback server: bombs stop at the size cap in bounded memory, whatever the coding;
stacked codings and compressions not read (compress, zstd) are refused as such; a label naming no compression
("UTF-8") is read as none."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import brotli
import httpx
import pytest
from sqlalchemy import select

from app.articles.models import Article
from app.ingest.fetch import FetchError, FetchPolicy, fetch_feed
from app.ingest.transport import guarded_transport
from app.services import Services
from app.settings import Settings
from app.sources.models import FetchLog
from app.sources.service import SourceRequest, create_source
from tests.feeds import FeedServer, Reply, items, rss

MIB = 1024 * 1024
CAP = MIB


def zlib_bomb(wbits: int, mib: int = 64) -> bytes:
    """`mib` MiB of zeros, made a MiB at a time: about 1,000 times smaller on the wire."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    zeros = bytes(MIB)
    return b"".join([compressor.compress(zeros) for _ in range(mib)]) + compressor.flush()


def brotli_bomb(mib: int = 256) -> bytes:
    compressor = brotli.Compressor(quality=5)
    zeros = bytes(MIB)
    return b"".join([compressor.process(zeros) for _ in range(mib)]) + compressor.finish()


BOMBS: dict[str, Callable[[], bytes]] = {
    "gzip": lambda: zlib_bomb(zlib.MAX_WBITS | 16),
    "deflate": lambda: zlib_bomb(zlib.MAX_WBITS),
    "raw deflate": lambda: zlib_bomb(-zlib.MAX_WBITS),
    "br": brotli_bomb,
}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=guarded_transport(allow_loopback=True, limits=httpx.Limits()),
                                 timeout=10) as client:  # fmt: skip
        yield client


async def fetch_error(http: httpx.AsyncClient, url: str) -> FetchError:
    with pytest.raises(FetchError) as raised:
        await fetch_feed(http, url, FetchPolicy(CAP, 1))
    return raised.value


@pytest.mark.parametrize("coding", list(BOMBS))
async def test_a_compression_bomb_stops_at_the_cap_in_bounded_memory(
    coding: str, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    # given a body of 64 MiB (256 MiB for brotli, 405 bytes on the wire) under a 1 MiB cap
    bomb = BOMBS[coding]()
    header = "deflate" if coding == "raw deflate" else coding
    feed_server.routes["/bomb.xml"] = Reply(200, bomb, {"Content-Encoding": header})
    # when it is fetched
    tracemalloc.start()
    try:
        error = await fetch_error(http, feed_server.url("/bomb.xml"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # then it is too large, and no more than a few pieces past the cap were ever held
    assert error.error_class == "too_large"
    assert peak < 16 * MIB, f"peak {peak / MIB:.0f} MiB"


@pytest.mark.parametrize(
    ("header", "body"),
    [
        ("gzip, gzip", gzip.compress(gzip.compress(rss(items(2))))),
        ("gzip", gzip.compress(rss(items(2)))),  # a second Content-Encoding header line is also stacking
        ("compress", rss(items(2))),
        ("zstd", rss(items(2))),
    ],
)
async def test_stacked_codings_and_compressions_not_read_are_refused(
    header: str, body: bytes, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    def reply(handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Encoding", header)
        if header == "gzip":
            handler.send_header("Content-Encoding", "br")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    feed_server.routes["/coded.xml"] = reply
    assert (await fetch_error(http, feed_server.url("/coded.xml"))).error_class == "unsupported_encoding"


async def test_every_coding_read_gives_the_feed(feed_server: FeedServer, http: httpx.AsyncClient) -> None:
    feed = rss(items(40))
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    bodies = [
        ("gzip", gzip.compress(feed)),
        ("x-gzip", gzip.compress(feed)),
        ("deflate", zlib.compress(feed)),
        ("deflate", raw.compress(feed) + raw.flush()),  # raw deflate, as some servers send it
        ("br", brotli.compress(feed)),
        ("identity", feed),
        ("Identity, GZIP", gzip.compress(feed)),  # identity is no coding: one remains
        ("UTF-8", feed),  # a label that names no compression, as some servers send: read as none
        ("none, gzip", gzip.compress(feed)),
    ]
    for n, (header, body) in enumerate(bodies):
        feed_server.routes[f"/{n}.xml"] = Reply(200, body, {"Content-Encoding": header})
        fetched = await fetch_feed(http, feed_server.url(f"/{n}.xml"), FetchPolicy(CAP, 1))
        assert fetched.body == feed, header


async def test_a_large_body_decodes_whole_under_the_cap(feed_server: FeedServer, http: httpx.AsyncClient) -> None:
    feed = rss(items(2000))  # several 64 KiB pieces once decoded
    assert len(feed) > 4 * 64 * 1024
    for n, (header, body) in enumerate([("gzip", gzip.compress(feed)), ("br", brotli.compress(feed))]):
        feed_server.routes[f"/big{n}.xml"] = Reply(200, body, {"Content-Encoding": header})
        fetched = await fetch_feed(http, feed_server.url(f"/big{n}.xml"), FetchPolicy(len(feed), 1))
        assert fetched.body == feed, header
    feed_server.routes["/over.xml"] = Reply(200, gzip.compress(feed), {"Content-Encoding": "gzip"})
    with pytest.raises(FetchError) as raised:
        await fetch_feed(http, feed_server.url("/over.xml"), FetchPolicy(len(feed) - 1, 1))
    assert raised.value.error_class == "too_large"


async def test_a_corrupt_body_is_a_decoding_failure(feed_server: FeedServer, http: httpx.AsyncClient) -> None:
    feed_server.routes["/bad.xml"] = Reply(200, b"this is not gzip at all", {"Content-Encoding": "gzip"})
    assert (await fetch_error(http, feed_server.url("/bad.xml"))).error_class == "decoding"


async def test_a_refused_coding_is_a_counted_fetch_failure(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Any
) -> None:
    feed_server.routes["/stacked.xml"] = Reply(200, gzip.compress(gzip.compress(rss(items(2)))),
                                               {"Content-Encoding": "gzip, gzip"})  # fmt: skip
    async with services.db.begin() as session:
        await create_source(session, settings, SourceRequest(feed_url=feed_server.url("/stacked.xml")))
    await crawl()
    async with services.db() as session:
        log = list(await session.scalars(select(FetchLog)))
        stored = (await session.scalars(select(Article.id))).all()
    assert [entry.error_class for entry in log] == ["unsupported_encoding"]
    assert stored == []
