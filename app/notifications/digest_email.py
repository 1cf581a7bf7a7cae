"""One reader's digest as a plain-text email of bounded size: the top stories (urgent first, then the newest), as
many as `digest_max_stories` and `digest_max_bytes` allow, and a line counting those left out. Its Message-ID is a
digest of the entries it covers, so a digest sent again (its sending not recorded: the database went away) carries
the same one and a receiver that de-duplicates on Message-ID keeps one copy."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import parseaddr
from typing import Any

from app.settings import Settings

TITLE_CHARS = 300  # a longer title is cut: one story is one line
HEADROOM = 1.4  # base64 or quoted-printable of the body: at most ~1.37 times its UTF-8 bytes


@dataclass(frozen=True)
class Digest:
    message: EmailMessage
    listed: frozenset[int]  # the delivery ids of the stories named; the others are counted only


def compose(settings: Settings, to: str, user_id: int, entries: Sequence[Any]) -> Digest:
    """`entries` (delivery rows: id, payload; ranked best first, payload None past the top) as one email."""
    lines = _fitting(settings, [e for e in entries if e.payload is not None][: settings.digest_max_stories])
    while True:
        message = _message(settings, to, user_id, entries, lines)
        if len(message.as_bytes()) <= settings.digest_max_bytes or not lines:
            return Digest(message, frozenset(i for i, _ in lines))
        lines = lines[:-1]


def _fitting(settings: Settings, ranked: list[Any]) -> list[tuple[int, str]]:
    """The lines of the ranked entries that fit the byte cap (less headers and encoding), best first."""
    budget, lines = (settings.digest_max_bytes - 1024) / HEADROOM, []
    for entry in ranked:
        line = _line(entry.payload)
        budget -= len(line.encode()) + 1
        if budget < 0:
            break
        lines.append((entry.id, line))
    return lines


def _line(story: dict[str, Any]) -> str:
    title = " ".join(str(story.get("title", "")).split())[:TITLE_CHARS]
    return f"- {title} ({story.get('source_count') or '?'} outlets, {str(story.get('at', ''))[:16]})"


def _message(settings: Settings, to: str, user_id: int, entries: Sequence[Any], lines: list[tuple[int, str]]
             ) -> EmailMessage:  # fmt: skip
    message = EmailMessage()
    message["From"], message["To"] = settings.smtp_from, to
    message["Subject"] = f"newsagg: {len(entries)} {'story' if len(entries) == 1 else 'stories'} for you"
    message["Message-ID"] = message_id(settings, user_id, [e.id for e in entries])
    left_out = len(entries) - len(lines)
    more = f"\n... and {left_out:,} more, left out to keep this email short.\n" if left_out else ""
    message.set_content("Your newsagg digest:\n\n" + "\n".join(line for _, line in lines) + "\n" + more)
    return message


def message_id(settings: Settings, user_id: int, delivery_ids: Sequence[int]) -> str:
    """The same for the same reader and entries: a resent digest is recognisably the same email."""
    covered = ",".join(map(str, sorted(delivery_ids)))
    digest = hashlib.sha256(f"{user_id}:{covered}".encode()).hexdigest()[:32]
    domain = parseaddr(settings.smtp_from)[1].rpartition("@")[2] or "newsagg.invalid"
    return f"<digest.{digest}@{domain}>"
