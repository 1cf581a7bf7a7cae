"""Near-duplicates: a syndicated or re-posted article (SimHash within distance 3) is marked as a copy of the
earliest such article of the last 48 hours, its original."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles import repository as articles
from app.articles.simhash import NEAR_DUPLICATE_DISTANCE, bands, hamming, simhash

WINDOW = timedelta(hours=48)


async def fingerprint_and_mark(db: AsyncEngine, article_ids: Sequence[int], *, now: datetime) -> dict[int, int]:
    """Fingerprint new articles and mark their near-duplicates; returns copy id -> original id."""
    async with db.begin() as connection:
        targets = await articles.fingerprint_targets(connection, article_ids)
        if not targets:
            return {}
        fingerprints = {t.id: (fp := simhash(f"{t.title}\n{t.summary}"), bands(fp)) for t in targets}
        await articles.set_fingerprints(connection, fingerprints)
        keys = sorted({key for _, band_keys in fingerprints.values() for key in band_keys})
        neighbours = await articles.band_neighbours(connection, keys, since=now - WINDOW)
        copies: dict[int, int] = {}
        for target in targets:
            fingerprint = fingerprints[target.id][0]
            if fingerprint == 0:  # no text to compare
                continue
            originals = [
                nid for nid, _, other in neighbours
                if nid < target.id and nid not in copies and hamming(other, fingerprint) <= NEAR_DUPLICATE_DISTANCE
            ]  # fmt: skip
            if originals:
                copies[target.id] = min(originals)
        await articles.mark_duplicates(connection, copies)
        return copies
