"""What text PostgreSQL can store, one rule for what arrives from outside: feed text is cleaned by it (`storable`,
app/ingest), API input refused by it (`unstorable`, app/api/text_input.py, cursors and WebSub tokens)."""

from __future__ import annotations


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored as PostgreSQL text, or None when it can: a NUL character (which text columns
    refuse) or a lone surrogate (which UTF-8 cannot encode; JSON feeds and GraphQL escapes can carry them)."""
    if "\x00" in text:
        return "a NUL character (U+0000)"
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            return "a lone surrogate (U+D800 to U+DFFF), which is not a character"
    return None


def storable(text: str) -> str:
    """`text` as PostgreSQL can store it (see `unstorable`): NUL characters removed, lone surrogates replaced."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    if unstorable(text):
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text
