"""HTML fragments from feeds to safe plain text: tags, scripts and styles gone, entities decoded, and only text
PostgreSQL can store (app/text/storable.py)."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

from app.text.storable import storable

_SKIPPED = frozenset({"script", "style", "noscript", "template", "iframe", "object", "svg", "head"})
_BLOCKS = frozenset({"p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"})
_SPACES = re.compile(r"\s+")


class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skipping += 1
        elif tag in _BLOCKS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED and self.skipping:
            self.skipping -= 1
        elif tag in _BLOCKS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(fragment: str, max_chars: int | None = None) -> str:
    """Plain text of an HTML fragment, whitespace collapsed, cut at a word boundary to `max_chars`."""
    if "<" in fragment:
        collector = _TextCollector()
        collector.feed(fragment)
        collector.close()
        fragment = "".join(collector.parts)
    text = _SPACES.sub(" ", storable(unescape(fragment))).strip()
    if max_chars is not None and len(text) > max_chars:
        cut = text[: max_chars - 1]
        space = cut.rfind(" ")
        text = (cut[:space] if space > max_chars // 2 else cut).rstrip() + "…"
    return text
