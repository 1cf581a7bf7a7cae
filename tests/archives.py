"""Archived fetches made by code, as the archive stores them (one body in `every` whole, the next compressed against
it), without crawling: for replays over thousands of bodies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from app.archive.compression import compress, dictionary
from app.services import Services

LOGS = text("""
    INSERT INTO fetch_log (source_id, fetched_at, status_code, duration_ms, bytes, items_seen, items_new)
    SELECT :source, t, 200, 1, 0, 0, 0 FROM unnest(CAST(:at AS timestamptz[])) AS t RETURNING id, fetched_at
""")
ARCHIVE = text("""
    INSERT INTO fetch_archive (id, source_id, fetched_at, url, status_code, headers, raw_bytes, reference_id, body)
    SELECT u.id, :source, u.at, :url, 200, '{"content-type": "application/rss+xml"}', u.raw, u.reference, u.body
    FROM unnest(CAST(:id AS bigint[]), CAST(:at AS timestamptz[]), CAST(:raw AS int[]), CAST(:reference AS bigint[]),
                CAST(:body AS bytea[])) AS u(id, at, raw, reference, body)
""")


async def archive_bodies(services: Services, source_id: int, bodies: list[bytes], *, every: int = 10,
                         chunk: int = 500) -> list[int]:  # fmt: skip
    """The fetch ids of `bodies`, archived in this order a second apart ending now."""
    start = datetime.now(UTC) - timedelta(seconds=len(bodies) + 60)
    ids: list[int] = []
    reference_id, against = None, None
    for first in range(0, len(bodies), chunk):
        part = bodies[first : first + chunk]
        at = [start + timedelta(seconds=first + k) for k in range(len(part))]
        async with services.engine.begin() as connection:
            logged = sorted((await connection.execute(LOGS, {"source": source_id, "at": at})).all(), key=lambda r: r[1])
            frames, references = [], []
            for k, (row, body) in enumerate(zip(logged, part, strict=True)):
                if (first + k) % every == 0:
                    reference_id, against = row.id, dictionary(body, level=3)
                    frames.append(compress(body, level=3))
                    references.append(None)
                else:
                    frames.append(compress(body, level=3, reference=against))
                    references.append(reference_id)
            await connection.execute(ARCHIVE, {
                "source": source_id, "url": "http://127.0.0.1:9/archived", "id": [r.id for r in logged], "at": at,
                "raw": [len(b) for b in part], "reference": references, "body": frames,
            })  # fmt: skip
        ids += [row.id for row in logged]
    return ids
