"""URL normalization: one article URL is one row however a feed spells it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.ingest.urls import InvalidUrl, normalize_url, normalized_or_none


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://Example.COM:80/a?b=1#frag", "http://example.com/a?b=1"),
        ("https://example.com:443", "https://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("https://example.com/a?utm_source=rss&utm_medium=feed&id=7", "https://example.com/a?id=7"),
        ("https://example.com/a?fbclid=x&gclid=y&mc_cid=z&mc_eid=w&q=news", "https://example.com/a?q=news"),
        ("https://user:secret@example.com/a", "https://example.com/a"),
        ("  https://example.com./a  ", "https://example.com/a"),
        ("https://[2001:DB8::1]:443/a", "https://[2001:db8::1]/a"),
        # what the hand-written normalization let through, one article then stored twice
        ("https://example.com/a/../b/./c", "https://example.com/b/c"),
        ("https://bücher.de/buch", "https://xn--bcher-kva.de/buch"),
        ("https://xn--bcher-kva.de/buch", "https://xn--bcher-kva.de/buch"),
        ("https://example.com/%7euser/%7Ebio", "https://example.com/~user/~bio"),
        ("https://example.com/a?page=2&id=7", "https://example.com/a?id=7&page=2"),
        ("https://example.com/a?tag=b&id=7&tag=a", "https://example.com/a?id=7&tag=b&tag=a"),  # a list keeps order
        ("https://example.com/caf%c3%a9?q=%e2%82%ac", "https://example.com/caf%C3%A9?q=%E2%82%AC"),
        ("https://example.com/café", "https://example.com/caf%C3%A9"),
        # the tracking and escaping of the demo snapshots' feeds (Daily Mail, BBC, Sydney Morning Herald, NZ Herald)
        (
            "https://www.dailymail.co.uk/news/article-8241929/x.html?ns_mchannel=rss&ito=1490&ns_campaign=1490",
            "https://www.dailymail.co.uk/news/article-8241929/x.html",
        ),
        (
            "https://www.bbc.co.uk/news/world-58582573?at_medium=RSS&at_campaign=KARANGA",
            "https://www.bbc.co.uk/news/world-58582573",
        ),
        (
            "https://www.smh.com.au/national/x-20200420-p54ljy.html?ref=rss&utm_medium=rss&utm_source=rss_feed",
            "https://www.smh.com.au/national/x-20200420-p54ljy.html?ref=rss",
        ),
        (
            "https://www.nzherald.co.nz/nz/news/article.cfm?c_id=1&objectid=12326320&amp;ref=rss",
            "https://www.nzherald.co.nz/nz/news/article.cfm?c_id=1&objectid=12326320&ref=rss",
        ),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


def test_relative_links_resolve_against_the_feed() -> None:
    assert normalize_url("/world/1?utm_campaign=x", base="https://Site.org/feed.xml") == "https://site.org/world/1"


RFC3986_BASE = "http://a/b/c/d;p?q"


@pytest.mark.parametrize(
    ("reference", "expected"),
    [  # RFC 3986 5.4.1 and 5.4.2, with the fragment dropped as newsagg does and the empty path as "/"
        ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"), ("/g", "http://a/g"),
        ("//g", "http://g/"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"), ("#s", "http://a/b/c/d;p?q"),
        ("g#s", "http://a/b/c/g"), ("g?y#s", "http://a/b/c/g?y"), (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"),
        ("g;x?y#s", "http://a/b/c/g;x?y"), ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"), ("./", "http://a/b/c/"),
        ("..", "http://a/b/"), ("../", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"),
        ("../../", "http://a/"), ("../../g", "http://a/g"), ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"),
        ("/./g", "http://a/g"), ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"), ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"), ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"), ("g?y/./x", "http://a/b/c/g?y/./x"), ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g"), ("g#s/../x", "http://a/b/c/g"),
    ],
)  # fmt: skip
def test_rfc3986_reference_resolution(reference: str, expected: str) -> None:
    assert normalize_url(reference, base=RFC3986_BASE) == expected


@pytest.mark.parametrize(
    "spellings",
    [  # RFC 3986 6.2.2 (case, percent-encoding, path segments) and 6.2.3 (scheme-based)
        ["HTTP://www.EXAMPLE.com/", "http://www.example.com/"],
        ["http://example.com/%7Esmith/", "http://example.com/~smith/", "http://example.com/%7esmith/"],
        ["http://a/./b/../b/%63/%7bfoo%7d", "http://a/b/c/%7Bfoo%7D"],
        ["http://example.com", "http://example.com/", "http://example.com:/", "http://example.com:80/"],
    ],
)
def test_rfc3986_equivalent_spellings(spellings: list[str]) -> None:
    assert len({normalize_url(spelling) for spelling in spellings}) == 1


@pytest.mark.parametrize("raw", ["ftp://example.com/x", "javascript:alert(1)", "file:///etc/passwd", "/relative",
                                 "http://", "https://example.com:99999/", "https://" + "a" * 70 + ".com/",
                                 "https://ex ample.com/"])  # fmt: skip
def test_refuses_what_is_not_an_absolute_http_url(raw: str) -> None:
    with pytest.raises(InvalidUrl):
        normalize_url(raw)


@pytest.mark.parametrize("link", [None, "", "javascript:alert(1)", "https://[x.example/1"])
def test_a_link_that_is_missing_or_no_http_url_is_none_not_the_feed(link: str | None) -> None:
    assert normalized_or_none(link, base="https://site.org/feed.xml") is None


def test_a_usable_link_is_normalized() -> None:
    assert normalized_or_none("/world/1?utm_campaign=x", base="https://Site.org/feed.xml") == "https://site.org/world/1"
    assert normalized_or_none("HTTP://Example.COM:80/a#frag") == "http://example.com/a"


segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.~%", min_size=0, max_size=12)


@given(
    host=st.from_regex(r"[a-zA-Z][a-zA-Z0-9-]{0,10}\.[a-zA-Z]{2,5}", fullmatch=True),
    path=st.lists(segment, max_size=4),
    params=st.lists(st.tuples(st.sampled_from(["id", "utm_source", "page", "fbclid", "q"]), segment), max_size=4),
    scheme=st.sampled_from(["http", "HTTPS", "https"]),
)
def test_normalization_is_idempotent_and_drops_tracking(
    host: str, path: list[str], params: list[tuple[str, str]], scheme: str
) -> None:
    query = "&".join(f"{k}={v}" for k, v in params)
    url = f"{scheme}://{host}/{'/'.join(path)}" + (f"?{query}" if query else "") + "#x"
    once = normalize_url(url)
    assert normalize_url(once) == once
    assert "utm_source" not in once
    assert "fbclid" not in once
    assert "#" not in once


def feed_links(shared_data: Path) -> list[str]:
    path = shared_data / "feeds" / "gesab001_headlines_items.jsonl.gz"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    with gzip.open(path, "rt") as lines:
        return sorted({json.loads(line)["link"] for line in lines} - {""})


def spellings(url: str) -> list[str]:
    """How a feed may spell the same link on another day."""
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    path, _, query = path.partition("?")
    pairs = [p for p in query.split("&") if p]
    return [
        f"{scheme.upper()}://{host.upper()}/{path}" + (f"?{query}" if query else ""),
        f"{scheme}://{host}:{443 if scheme == 'https' else 80}/./{path}?{'&'.join(reversed(pairs))}#comments",
        f"{scheme}://{host}/x/../{path.replace('-', '%2d')}?utm_source=rss&{query}&fbclid=1",
    ]


def test_real_feed_links_keep_apart_and_their_spellings_meet(shared_data: Path) -> None:
    links = feed_links(shared_data)[::5]  # 15,000 of the 76,000: the whole list takes a minute
    normalized = {}
    for link in links:
        try:
            normalized[link] = normalize_url(link)
        except InvalidUrl:
            assert not link.startswith(("http://", "https://")), link  # cnn://deeplink, nothing else
    assert len(normalized) >= len(links) - 5
    assert len(set(normalized.values())) == len(normalized)  # no two articles of the snapshots become one
    for once in normalized.values():
        assert normalize_url(once) == once
        assert not any(mark in once for mark in ("utm_", "ns_campaign", "at_medium", "amp;", "#"))
    for link in links[::10]:
        if link in normalized and "%" not in link:
            assert {normalize_url(spelling) for spelling in spellings(link)} == {normalized[link]}, link
