"""URL normalization: one article URL is one row however a feed spells it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.ingest.urls import InvalidUrl, normalize_url


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
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


def test_relative_links_resolve_against_the_feed() -> None:
    assert normalize_url("/world/1?utm_campaign=x", base="https://Site.org/feed.xml") == "https://site.org/world/1"


@pytest.mark.parametrize("raw", ["ftp://example.com/x", "javascript:alert(1)", "file:///etc/passwd", "/relative",
                                 "http://", "https://example.com:99999/"])  # fmt: skip
def test_refuses_what_is_not_an_absolute_http_url(raw: str) -> None:
    with pytest.raises(InvalidUrl):
        normalize_url(raw)


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
