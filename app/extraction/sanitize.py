"""Extracted or feed-supplied HTML made safe to show: an allow-list of text markup, by nh3 (ammonia's bindings)."""

from __future__ import annotations

import nh3

TAGS = frozenset({
    "p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code", "ul", "ol", "li", "dl", "dt", "dd",
    "em", "strong", "b", "i", "u", "s", "sub", "sup", "q", "cite", "a", "img", "figure", "figcaption",
    "table", "thead", "tbody", "tr", "th", "td", "hr",
})  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "th": {"colspan", "rowspan"},
              "td": {"colspan", "rowspan"}}  # fmt: skip
SCHEMES = frozenset({"http", "https"})


def safe_html(fragment: str) -> str:
    """Only the allowed tags and attributes; scripts, styles, event handlers and non-http(s) links are gone; links
    get rel="noopener noreferrer nofollow" (relative ones stay relative: clients resolve them against the
    article's URL)."""
    return nh3.clean(
        fragment,
        tags=set(TAGS),
        attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
        url_schemes=set(SCHEMES),
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    ).strip()
