"""Understanding a new article, before it joins a story: its SimHash fingerprint, language, topics and named
entities (of its headline and the opening of its full text when the feed carried it, else its summary); and whether
it is a near-duplicate (a syndicated or re-posted article, SimHash within distance 3), marked as a copy of the
earliest such article of the last 48 hours, its original."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles import repository as articles
from app.articles.labels import label
from app.articles.simhash import NEAR_DUPLICATE_DISTANCE, bands, hamming, simhash
from app.entities import repository as entities
from app.entities.extractor import Entity, extract
from app.observability.work import count_understood

WINDOW = timedelta(hours=48)
Named = dict[int, list[Entity]]


def _understand(targets: list[articles.UnderstandTarget]) -> tuple[dict[int, articles.Understanding], Named]:
    labels = label([(t.title, t.summary, t.declared_language) for t in targets])
    count_understood([found.topics for found in labels])
    understood = {
        t.id: articles.Understanding(fp := simhash(f"{t.title}\n{t.summary}"), bands(fp), found.language, found.topics)
        for t, found in zip(targets, labels, strict=True)
    }
    return understood, {t.id: extract(t.title, t.text_opening or t.summary, understood[t.id].language) for t in targets}


async def understand_articles(
    db: AsyncEngine, article_ids: Sequence[int], *, now: datetime, again: bool = False
) -> dict[int, int]:
    """Fingerprint and label new articles (language, topics), and mark their near-duplicates; returns copy id ->
    original id. `again`: articles understood before whose text changed since (a replay through a newer parser):
    understood anew, their old entities and copy mark dropped first (the search trigger hears of the new labels)."""
    async with db.begin() as connection:
        targets = await articles.understand_targets(connection, article_ids, again=again)
        if not targets:
            return {}
        found, named = await asyncio.to_thread(_understand, targets)
        if again:
            await entities.forget(connection, [t.id for t in targets])
            await articles.mark_duplicates(connection, {}, clear=[t.id for t in targets])
        await articles.set_understanding(connection, found)
        await entities.save(connection, named)
        keys = sorted({key for u in found.values() for key in u.bands})
        by_band: dict[int, list[tuple[int, int]]] = defaultdict(list)  # two copies always share a band
        for neighbour_id, other in await articles.band_neighbours(connection, keys, since=now - WINDOW):
            for key in bands(other):
                by_band[key].append((neighbour_id, other))
        copies: dict[int, int] = {}
        for target in targets:
            fingerprint = found[target.id].simhash
            if fingerprint == 0:  # no text to compare
                continue
            originals = [
                nid for key in found[target.id].bands for nid, other in by_band.get(key, ())
                if nid < target.id and nid not in copies and hamming(other, fingerprint) <= NEAR_DUPLICATE_DISTANCE
            ]  # fmt: skip
            if originals:
                copies[target.id] = min(originals)
        await articles.mark_duplicates(connection, copies)
        return copies
