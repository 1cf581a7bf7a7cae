"""SimHash and LSH bands (pure), and near-duplicates marked end to end."""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.articles.simhash import BANDS, bands, hamming, simhash, tokens
from app.services import Services
from tests.conftest import GraphQLClient
from tests.feeds import FeedServer, Item, Reply, rss
from tests.newsroom import administrator

WIRE = ("Fed official says weak data caused by weather, should not slow taper. The Federal Reserve official "
        "said on Monday that recent weak economic data was largely due to the severe winter weather and that "
        "the central bank should keep reducing its bond purchases at the current pace.")  # fmt: skip
OTHER = "Apple unveils a new iPhone with a larger screen and a better camera at its annual event in California."


def test_tokens_are_long_words_and_their_trigrams() -> None:
    assert tokens("The Fed is on it, as usual") == ["the", "fed", "usual", "the fed usual"]


def test_identical_texts_match_and_unrelated_ones_are_far() -> None:
    assert simhash(WIRE) == simhash(WIRE.upper())  # case does not matter
    assert hamming(simhash(WIRE), simhash(WIRE + " ")) == 0
    assert hamming(simhash(WIRE), simhash(OTHER)) > 20
    assert simhash("") == 0
    assert -(2**63) <= simhash(WIRE) < 2**63  # fits PostgreSQL bigint


def test_a_copy_with_a_small_edit_stays_close() -> None:
    longer = " ".join([WIRE] * 4)  # wire copies are article-length; one edit then moves few bits
    edited = longer.replace("Monday", "Tuesday", 1)
    assert hamming(simhash(longer), simhash(edited)) <= 3


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.sets(st.integers(0, 63), max_size=3))
def test_fingerprints_within_three_bits_share_a_band(fingerprint: int, flips: set[int]) -> None:
    other = fingerprint
    for bit in flips:
        other ^= 1 << bit
    other = (other + 2**63) % 2**64 - 2**63  # back to signed
    assert hamming(fingerprint, other) == len(flips)
    assert set(bands(fingerprint)) & set(bands(other))


def test_band_keys_are_distinct_per_position() -> None:
    keys = bands(0)
    assert len(set(keys)) == BANDS
    rng = random.Random(7)
    for _ in range(100):
        assert [k >> 16 for k in bands(rng.getrandbits(64) - 2**63)] == [0, 1, 2, 3]


Crawl = Callable[..., Coroutine[Any, Any, int]]


async def test_a_syndicated_copy_is_marked_as_a_copy_of_the_original(
    gql: GraphQLClient, feed_server: FeedServer, crawl: Crawl, services: Services
) -> None:
    story = " ".join([WIRE] * 3)
    feed_server.routes["/wire.xml"] = Reply(200, rss([Item(title="Fed: weather to blame", link="https://wire.example/1",
                                                           guid="w1", summary=story),
                                                      Item(title="Apple event", link="https://wire.example/2",
                                                           guid="w2", summary=OTHER)]))  # fmt: skip
    feed_server.routes["/paper.xml"] = Reply(200, rss([Item(title="Fed: weather to blame", link="https://paper.example/a",
                                                            guid="p1", summary=story + " (Reuters)")]))  # fmt: skip
    admin = await administrator(gql, services)
    await admin.run("SourceCreate", input={"feedUrl": feed_server.url("/wire.xml"), "name": "Wire"})
    await crawl()
    await admin.run("SourceCreate", input={"feedUrl": feed_server.url("/paper.xml"), "name": "Paper"})
    await crawl()
    query = "{ articles(first: 10) { edges { node { url simhash source { name } duplicateOf { url } } } } }"
    body = await gql.post(query)
    nodes = {edge["node"]["url"]: edge["node"] for edge in body["data"]["articles"]["edges"]}
    assert nodes["https://paper.example/a"]["duplicateOf"] == {"url": "https://wire.example/1"}
    assert nodes["https://wire.example/1"]["duplicateOf"] is None
    assert nodes["https://wire.example/2"]["duplicateOf"] is None
    assert all(node["simhash"] is not None for node in nodes.values())
