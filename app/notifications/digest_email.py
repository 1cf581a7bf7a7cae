"""One reader's digest as an email of bounded size, multipart/alternative (plain text, and HTML whose titles are
escaped and link to their story): the top stories (urgent first, then the newest), as many as `digest_max_stories`
and `digest_max_bytes` (the whole email as sent: headers and both parts) allow, and a line counting those left out.
Its Message-ID is a digest of the entries it covers, so a digest sent again (its sending not recorded: the database
went away) carries the same one and a receiver that de-duplicates on Message-ID keeps one copy."""

from __future__ import annotations

import hashlib
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import SMTP  # lines ending in CRLF, as sent: the size that counts
from email.utils import parseaddr
from typing import Any

from app.settings import Settings

TITLE_CHARS = 300  # a longer title is cut: one story is one line
HEADROOM = 1.4  # base64 or quoted-printable of the body: at most ~1.37 times its UTF-8 bytes
FRAME_BYTES = 2048  # headers, the parts' headers and boundaries, the HTML part's frame
INTRO = "Your newsagg digest:"


@dataclass(frozen=True)
class Digest:
    message: EmailMessage
    listed: frozenset[int]  # the delivery ids of the stories named; the others are counted only


@dataclass(frozen=True)
class Item:
    """One story as the email lists it: its delivery id, its plain-text line and its HTML list item."""

    id: int
    text: str
    html: str


def compose(settings: Settings, to: str, user_id: int, entries: Sequence[Any], links: Mapping[int, str]) -> Digest:
    """`entries` (delivery rows: id, payload; ranked best first, payload None past the top) as one email; `links`
    says where each story (by id) leads."""
    top = [e for e in entries if e.payload is not None][: settings.digest_max_stories]
    items = _fitting(settings, [_item(entry.id, entry.payload, links) for entry in top])
    while True:
        message = _message(settings, to, user_id, entries, items)
        if len(message.as_bytes(policy=SMTP)) <= settings.digest_max_bytes or not items:
            return Digest(message, frozenset(item.id for item in items))
        items = items[:-1]


def _fitting(settings: Settings, ranked: list[Item]) -> list[Item]:
    """The ranked items that fit the byte cap (less the frame and encoding), best first."""
    budget, items = (settings.digest_max_bytes - FRAME_BYTES) / HEADROOM, []
    for item in ranked:
        budget -= len(item.text.encode()) + len(item.html.encode()) + 2
        if budget < 0:
            break
        items.append(item)
    return items


def _item(delivery_id: int, story: dict[str, Any], links: Mapping[int, str]) -> Item:
    title = " ".join(str(story.get("title", "")).split())[:TITLE_CHARS]
    about = f"({story.get('source_count') or '?'} outlets, {str(story.get('at', ''))[:16]})"
    link = links.get(int(story["story_id"])) if story.get("story_id") is not None else None
    named = html.escape(title)
    if link and link.startswith(("https://", "http://")):  # never a javascript: or data: link
        named = f'<a href="{html.escape(link)}">{named}</a>'
    return Item(delivery_id, f"- {title} {about}", f'<li dir="auto">{named} {html.escape(about)}</li>')


def _message(settings: Settings, to: str, user_id: int, entries: Sequence[Any], items: list[Item]) -> EmailMessage:
    message = EmailMessage()
    message["From"], message["To"] = settings.smtp_from, to
    message["Subject"] = f"newsagg: {len(entries)} {'story' if len(entries) == 1 else 'stories'} for you"
    message["Message-ID"] = message_id(settings, user_id, [e.id for e in entries])
    left_out = len(entries) - len(items)
    more = f"... and {left_out:,} more, left out to keep this email short." if left_out else ""
    text = "\n".join(item.text for item in items)
    message.set_content(f"{INTRO}\n\n{text}\n" + (f"\n{more}\n" if more else ""))
    message.add_alternative(_html(items, more), subtype="html")
    return message


def _html(items: list[Item], more: str) -> str:
    listed = "\n".join(item.html for item in items)
    footer = f"<p>{html.escape(more)}</p>\n" if more else ""
    return (f'<!DOCTYPE html>\n<html>\n<head><meta charset="utf-8"><title>{INTRO[:-1]}</title></head>\n<body>\n'
            f"<p>{INTRO}</p>\n<ul>\n{listed}\n</ul>\n{footer}</body>\n</html>\n")  # fmt: skip


def message_id(settings: Settings, user_id: int, delivery_ids: Sequence[int]) -> str:
    """The same for the same reader and entries: a resent digest is recognisably the same email."""
    covered = ",".join(map(str, sorted(delivery_ids)))
    digest = hashlib.sha256(f"{user_id}:{covered}".encode()).hexdigest()[:32]
    domain = parseaddr(settings.smtp_from)[1].rpartition("@")[2] or "newsagg.invalid"
    return f"<digest.{digest}@{domain}>"
