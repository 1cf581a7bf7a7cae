"""Content fingerprints of an article (pure functions)."""

from __future__ import annotations

import mmh3


def content_hash(title: str, summary: str) -> int:
    """Signed 64-bit hash of the normalized text: equal for exact copies across URLs."""
    normalized = " ".join(f"{title}\n{summary}".lower().split())
    low, _high = mmh3.hash64(normalized.encode(), signed=True)
    return int(low)
