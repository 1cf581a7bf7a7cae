"""JSON Feed 1.0/1.1 (https://jsonfeed.org), read into the same raw shape feedparser gives for RSS and Atom."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any


class NotJsonFeed(ValueError):
    pass


def looks_like_json(body: bytes, content_type: str | None) -> bool:
    return (content_type is not None and "json" in content_type.lower()) or body.lstrip()[:1] == b"{"


def read_json_feed(body: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(feed metadata, entries) with feedparser's key names: id, link, title, summary, author, published_parsed."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise NotJsonFeed(f"invalid JSON: {error}") from error
    except RecursionError as error:  # arrays or objects nested deeper than the parser's stack: no feed is
        raise NotJsonFeed("invalid JSON: nested too deeply") from error
    if not isinstance(document, dict) or "jsonfeed.org" not in str(document.get("version", "")):
        raise NotJsonFeed("JSON, but not a JSON Feed (no jsonfeed.org version)")
    items = document.get("items")
    meta = {"title": _text(document.get("title")), "link": _text(document.get("home_page_url")),
            "language": _text(document.get("language"))}  # fmt: skip
    return meta, [_entry(item) for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _entry(item: dict[str, Any]) -> dict[str, Any]:
    """Every field is checked for its type: a document is a publisher's, any JSON may stand where an object is due."""
    return {
        "id": _text(item.get("id")),
        "link": _text(item.get("url")) or _text(item.get("external_url")),
        "title": _text(item.get("title")),
        "summary": _text(item.get("summary")) or _text(item.get("content_html")) or _text(item.get("content_text")),
        "author": _text(_first_author(item).get("name")),
        "published_parsed": _struct_time(item.get("date_published") or item.get("date_modified")),
        "content": [{"value": _text(item.get("content_html"))}] if _text(item.get("content_html")) else [],
    }


def _first_author(item: dict[str, Any]) -> dict[str, Any]:
    """JSON Feed 1.1's `authors` (a list of objects), else 1.0's `author` (an object); {} when neither is one."""
    authors = item.get("authors")
    first = authors[0] if isinstance(authors, list) and authors else item.get("author")
    return first if isinstance(first, dict) else {}


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else str(value) if isinstance(value, int | float) else ""


def _struct_time(value: object) -> time.struct_time | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return time.gmtime(parsed.timestamp())
