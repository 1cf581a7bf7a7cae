"""OPML 1.0/2.0 subscription lists, read and written (pure). A folder outline's title is the category."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException, EntitiesForbidden


class OpmlError(ValueError):
    """Not an OPML document we can read."""


class UnsafeXml(OpmlError):
    """A document declaring entities (the stuff of entity bombs and of reading local files) or external references."""


@dataclass(frozen=True, slots=True)
class OpmlFeed:
    feed_url: str
    title: str | None = None
    site_url: str | None = None
    category: str | None = None
    language: str | None = None
    authority: float | None = None
    country: str | None = None  # ISO 3166-1 alpha-2, as the list gives it (checked on import)
    outlet_kind: str | None = None  # wire, national, local, international


def read_opml(document: bytes) -> list[OpmlFeed]:
    """Parsed by defusedxml: a DOCTYPE is allowed, entity declarations and external references anywhere are not."""
    try:
        root = SafeET.fromstring(document)
    except EntitiesForbidden as error:
        origin = f" from {error.sysid}" if error.sysid else ""
        raise UnsafeXml(f"entity declarations are refused (entity {error.name!r}{origin})") from error
    except DefusedXmlException as error:
        raise UnsafeXml(f"refused: {error}") from error
    except ET.ParseError as error:
        raise OpmlError(f"not well-formed XML: {error}") from error
    body = root.find("body")
    if root.tag != "opml" or body is None:
        raise OpmlError("no <opml><body> element")
    feeds: list[OpmlFeed] = []
    _walk(body, None, feeds)
    return feeds


def _walk(parent: ET.Element, category: str | None, feeds: list[OpmlFeed]) -> None:
    for outline in parent.findall("outline"):
        url = outline.get("xmlUrl") or outline.get("xmlurl")
        title = outline.get("title") or outline.get("text")
        if url:
            feeds.append(OpmlFeed(
                feed_url=url.strip(), title=title, site_url=outline.get("htmlUrl"),
                category=outline.get("category") or category, language=outline.get("language"),
                authority=_authority(outline.get("authority")), country=outline.get("country"),
                outlet_kind=outline.get("outletKind"),
            ))  # fmt: skip
        _walk(outline, title or category, feeds)


def _authority(raw: str | None) -> float | None:
    try:
        value = float(raw) if raw is not None else None
    except ValueError:
        return None
    return value if value is not None and 0.0 <= value <= 1.0 else None


def write_opml(feeds: list[OpmlFeed], title: str = "newsagg sources") -> str:
    """OPML 2.0 with one folder per category; `authority`, `country` and `outletKind` travel as extra attributes."""
    root = ET.Element("opml", version="2.0")
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = title
    ET.SubElement(head, "dateCreated").text = format_datetime(datetime.now(UTC))
    body = ET.SubElement(root, "body")
    folders: dict[str | None, ET.Element] = {}
    for feed in sorted(feeds, key=lambda f: (f.category or "", (f.title or f.feed_url).lower())):
        if feed.category not in folders:
            folders[feed.category] = ET.SubElement(body, "outline", text=feed.category) if feed.category else body
        attributes = {"type": "rss", "text": feed.title or feed.feed_url, "title": feed.title or feed.feed_url,
                      "xmlUrl": feed.feed_url}  # fmt: skip
        if feed.site_url:
            attributes["htmlUrl"] = feed.site_url
        if feed.language:
            attributes["language"] = feed.language
        if feed.authority is not None:
            attributes["authority"] = f"{feed.authority:g}"
        if feed.country:
            attributes["country"] = feed.country
        if feed.outlet_kind:
            attributes["outletKind"] = feed.outlet_kind
        ET.SubElement(folders[feed.category], "outline", attributes)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
