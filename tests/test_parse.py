"""Feed parsing: formats, hostile inputs, text cleaning, real snapshots."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.ingest import parse as parse_module
from app.ingest.parse import FeedParseError, TextLimits, parse_feed, strip_doctype
from app.ingest.text import html_to_text
from tests.feeds import Item, atom, items, rss

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
LIMITS = TextLimits(title=500, summary=300)


def parse(body: bytes, url: str = "https://feeds.example.org/rss", content_type: str | None = None):  # type: ignore[no-untyped-def]
    return parse_feed(body, feed_url=url, content_type=content_type, fetched_at=NOW, limits=LIMITS)


def test_rss_entries_are_mapped_and_cleaned() -> None:
    feed = parse(rss(items(3)))
    assert [e.title for e in feed.entries] == ["Story 0", "Story 1", "Story 2"]
    first = feed.entries[0]
    assert first.url == "https://news.example.org/story-0"  # utm_* dropped
    assert first.external_id == "Story-0"
    assert first.summary == "Summary of Story 0"  # tags and the script gone
    assert first.published_at == datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def test_atom_and_json_feed() -> None:
    assert [e.title for e in parse(atom(items(2))).entries] == ["Story 0", "Story 1"]
    json_feed = {"version": "https://jsonfeed.org/version/1.1", "title": "J", "items": [
        {"id": "j1", "url": "https://j.example/1", "title": "Json one", "content_html": "<p>hi</p>",
         "date_published": "2026-11-01T10:00:00Z"}]}  # fmt: skip
    parsed = parse(json.dumps(json_feed).encode(), content_type="application/feed+json")
    assert [(e.external_id, e.title, e.summary) for e in parsed.entries] == [("j1", "Json one", "hi")]


def test_relative_links_future_dates_and_missing_fields() -> None:
    future = NOW + timedelta(days=3)
    feed = parse(rss([
        Item(title="Relative", link="/a/1", published=future),
        Item(title="", link="https://x.example/no-title"),
        Item(title="No link", link=""),
        Item(title="No date", link="https://x.example/2"),
    ]))  # fmt: skip
    assert [e.title for e in feed.entries] == ["Relative", "https://x.example/no-title", "No date"]
    assert feed.entries[0].url == "https://feeds.example.org/a/1"
    assert feed.entries[0].published_at == NOW  # clamped
    assert feed.entries[2].published_at == NOW  # fetch time
    assert feed.skipped == 1  # neither a link nor an id


def test_untitled_entries_and_id_only_entries_are_kept() -> None:
    feed = parse(atom([Item(title="", link="", guid="urn:uuid:1234", summary="<p>A quake struck at dawn.</p>")]))
    assert [(e.url, e.external_id, e.title) for e in feed.entries] == [
        (None, "urn:uuid:1234", "A quake struck at dawn.")]  # fmt: skip


def test_a_guid_repeated_for_another_url_keeps_both() -> None:
    entries = [Item(title=f"T{k}", link=f"https://x.example/{k}", guid=f"g{k}") for k in range(40)]
    entries.append(Item(title="Reused", link="https://x.example/other", guid="g3"))
    ids = [e.external_id for e in parse(rss(entries)).entries]
    assert len(set(ids)) == 41
    assert ids[-1] == "https://x.example/other"


def test_entity_bomb_is_defused_by_stripping_the_doctype() -> None:
    levels = ['<!ENTITY a0 "boom">'] + [f'<!ENTITY a{i} "{("&a" + str(i - 1) + ";") * 10}">' for i in range(1, 10)]
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE rss [' + "".join(levels) + "]>"
        '<rss version="2.0"><channel><title>t</title><item><title>&a9;</title><link>https://b.example/1</link>'
        "</item><item><title>Fine</title><link>https://b.example/2</link></item></channel></rss>"
    ).encode()
    assert b"<!ENTITY" not in strip_doctype(bomb)
    feed = parse(bomb)
    assert all(len(e.title) < 100 for e in feed.entries)
    assert "Fine" in [e.title for e in feed.entries]


@pytest.mark.parametrize(
    "subset",
    [
        "".join(['<!ENTITY a0 "boom">'] + [f'<!ENTITY a{i} "{("&a" + str(i - 1) + ";") * 10}">' for i in range(1, 10)]),
        '<!ENTITY a9 "' + "boom" * 25_000 + '">',  # quadratic blowup: 100 KB, referenced below
        '<!ENTITY a9 SYSTEM "file:///etc/passwd">',
        '<!ENTITY a9 SYSTEM "http://127.0.0.1:9/boom">',
    ],
)
def test_a_doctype_past_the_prolog_is_left_to_expat_which_expands_nothing(subset: str) -> None:
    """feedparser's expat stops at its amplification limit and never fetches an external entity; its loose parser
    then keeps the reference as text."""
    comment = "<!--" + "c" * 4200 + "-->"  # past what strip_doctype looks at
    body = (
        f'<?xml version="1.0"?>{comment}<!DOCTYPE rss [{subset}]><rss version="2.0"><channel><title>t</title>'
        + "<item><title>" + "&a9;" * 200 + "</title><link>https://b.example/1</link></item></channel></rss>"
    ).encode()  # fmt: skip
    assert b"<!ENTITY" in strip_doctype(body)
    titles = [e.title for e in parse(body).entries]
    assert titles
    assert all("boom" not in t and "root:" not in t for t in titles)


def test_doctype_only_stripped_from_the_prolog() -> None:
    body = b'<?xml version="1.0"?><rss><channel><description>&lt;!DOCTYPE x&gt;</description></channel></rss>'
    assert strip_doctype(body) == body


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<!DOCTYPE html><html><head><title>503</title></head><body>Service Unavailable</body></html>", "HTML"),
        (b"", "empty"),
        (b"\x00\x01\x02 garbage \xff\xfe", "not a readable feed"),
    ],
)
def test_unreadable_bodies_are_a_clear_error(body: bytes, reason: str) -> None:
    with pytest.raises(FeedParseError, match=reason):
        parse(body)


def test_truncated_feed_keeps_what_it_can() -> None:
    body = rss(items(5))
    feed = parse(body[: body.index(b"Story 4")])
    assert len(feed.entries) >= 3
    assert feed.bozo


def test_html_to_text() -> None:
    assert html_to_text("<p>A &amp; B</p><style>p{}</style><p>C&nbsp;D</p>") == "A & B C\xa0D".replace("\xa0", " ")
    assert html_to_text("plain &lt;b&gt; text") == "plain <b> text"
    cut = html_to_text("word " * 100, max_chars=50)
    assert len(cut) <= 50
    assert cut.endswith("…")


def test_real_snapshots_parse(sample_feeds: Path) -> None:
    """Every snapshot of the sample either yields entries or is one of the known-broken ones (an HTML page)."""
    parsed, failed = 0, []
    for path in sorted(sample_feeds.rglob("*.xml")):
        try:
            parsed += len(parse(path.read_bytes(), url="https://feeds.example.org/x").entries)
        except FeedParseError as error:
            failed.append((path.name, str(error)))
    assert parsed > 1500
    assert all("HTML" in reason for _, reason in failed), failed


def test_feedparser_corpus_never_crashes(shared_data: Path) -> None:
    """feedparser's own edge cases (encodings, entities, ill-formed XML) end in entries or a FeedParseError."""
    corpus = shared_data / "feeds" / "feedparser_tests" / "tests"
    if not corpus.is_dir():
        pytest.skip(f"{corpus} is missing")
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    outcomes = {"entries": 0, "empty": 0, "error": 0}
    for path in files:
        try:
            feed = parse(path.read_bytes())
        except FeedParseError:
            outcomes["error"] += 1
            continue
        outcomes["entries" if feed.entries else "empty"] += 1
    assert sum(outcomes.values()) == len(files) > 1000


def test_repeated_guids_fall_back_to_links_so_nothing_is_lost() -> None:
    same_guid = [Item(title=f"T{k}", link=f"https://x.example/{k}", guid="always-the-same") for k in range(20)]
    feed = parse(rss(same_guid))
    assert len({e.external_id for e in feed.entries}) == 20
    assert feed.entries[0].external_id == "https://x.example/0"


def test_a_few_missing_guids_keep_guid_identity() -> None:
    entries = [Item(title=f"T{k}", link=f"https://x.example/{k}", guid=f"g{k}") for k in range(40)]
    entries.append(Item(title="No guid", link="https://x.example/none"))  # 1 of 41 < 5%
    feed = parse(rss(entries))
    assert feed.entries[0].external_id.endswith("g0")
    assert feed.entries[-1].external_id == "https://x.example/none"


def test_nul_characters_lone_surrogates_and_half_open_ipv6_links_do_not_sink_a_feed() -> None:
    # given a JSON feed whose items carry NULs and lone surrogates (PostgreSQL and UTF-8 refuse them) and an RSS feed
    # whose item links a bracketed host left open (the URL parser raises on it), each beside a good item
    json_feed = {"version": "https://jsonfeed.org/version/1.1", "title": "J\u0000", "items": [
        {"id": "n\u00001", "url": "https://j.example/1", "title": "Nul\u0000 title \ud800",
         "author": {"name": "A\u0000"}, "content_html": "<p>body\u0000 \udfff</p>",
         "date_published": "2026-11-01T10:00:00Z"},
        {"id": "ok", "url": "https://j.example/2", "title": "Good",
         "date_published": "2026-11-01T10:00:00Z"}]}  # fmt: skip
    parsed = parse(json.dumps(json_feed).encode(), content_type="application/feed+json")
    rss_feed = parse(rss([Item("Half IPv6", "https://[x.example/1", "v6"), Item("Good", "https://r.example/2", "g")]))
    # then every item is kept, with text PostgreSQL can store, and the unusable link dropped (its guid identifies it)
    texts = [(e.external_id, e.title, e.summary, e.content or "") for e in parsed.entries]
    assert texts[0][:3] == ("n1", "Nul title ?", "body ?")
    assert all("\x00" not in t for row in texts for t in row)
    assert all(isinstance(t.encode("utf-8"), bytes) for row in texts for t in row)  # no lone surrogate left
    assert parsed.title == "J"
    assert [(e.external_id, e.url) for e in rss_feed.entries] == [("v6", None), ("g", "https://r.example/2")]


JSON_FEED = "https://jsonfeed.org/version/1.1"
ITEM_FIELDS = ("id", "url", "external_url", "title", "summary", "content_html", "content_text", "author", "authors",
               "date_published", "date_modified")  # fmt: skip
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(("name", "url")), inner, max_size=2),
    max_leaves=8,
)


@pytest.mark.parametrize(
    "item",
    [
        {"authors": {"name": "An object where a list is due"}},
        {"authors": 5},
        {"authors": "Ann"},
        {"authors": [], "author": ["not", "an", "object"]},
    ],
)
def test_a_json_feed_author_of_the_wrong_type_is_no_author(item: dict[str, object]) -> None:
    # given a JSON Feed item whose authors are not a list of objects (KeyError: 0 and TypeError before)
    document = {"version": JSON_FEED, "items": [{"id": "a1", "url": "https://j.example/1", "title": "T", **item}]}
    # when it is parsed, then the item is read, without an author
    parsed = parse(json.dumps(document).encode(), content_type="application/feed+json")
    assert [(e.external_id, e.author) for e in parsed.entries] == [("a1", None)]


def test_a_json_feed_nested_past_the_parsers_stack_is_unreadable() -> None:
    body = (f'{{"version": "{JSON_FEED}", "items": ' + "[" * 100_000 + "]" * 100_000 + "}").encode()
    with pytest.raises(FeedParseError, match="nested too deeply") as caught:
        parse(body, content_type="application/feed+json")
    assert caught.value.error_class == "parse"


@given(st.dictionaries(st.sampled_from(ITEM_FIELDS), ANY_JSON), ANY_JSON)
def test_any_json_in_a_json_feed_is_read_or_refused_never_a_crash(item: dict[str, object], title: object) -> None:
    document = {"version": JSON_FEED, "title": title, "home_page_url": title, "items": [item, title]}
    try:
        parse(json.dumps(document).encode(), content_type="application/feed+json")
    except FeedParseError as error:  # refused as no feed, never as a parser that raised something else
        refused = error
    else:
        return
    assert refused.error_class == "parse"


def test_whatever_a_body_makes_the_parser_raise_is_a_failed_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    # given a reader with a bug that some body meets (standing in for one nobody has found yet)
    def broken(body: bytes, feed_url: str, content_type: str | None) -> None:
        raise IndexError("list index out of range")

    monkeypatch.setattr(parse_module, "_read", broken)
    # when a body is parsed, then the parse fails as such, a class of its own saying so
    with pytest.raises(FeedParseError, match="IndexError: list index out of range") as caught:
        parse(rss(items(1)))
    assert caught.value.error_class == "parser_error"
