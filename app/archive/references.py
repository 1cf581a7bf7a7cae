"""Reference bodies kept in process: each source's current reference serves its next nine fetches, and a replay reads
nine bodies per reference, so a reference is read from PostgreSQL and decompressed (and its dictionary digested) once
per process rather than once per body. A reference id names one immutable row (an archived body is never rewritten),
so an entry is never stale; the least recently used go first once the entries exceed their byte budget."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import zstandard

from app.archive.compression import decompress, dictionary


@dataclass(frozen=True, slots=True)
class Reference:
    id: int
    body: bytes  # as received
    dictionary: zstandard.ZstdCompressionDict  # digested for compression at the archive's level

    @property
    def cost(self) -> int:
        """Bytes it holds: the body, and zstd's digested copy of it (about as large again)."""
        return 2 * len(self.body)


class ReferenceCache:
    """Reference id -> Reference, bounded by bytes (LRU). Used from the event loop and from the parser thread."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.bytes = 0
        self.hits = self.misses = 0
        self._entries: OrderedDict[int, Reference] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, reference_id: int) -> Reference | None:
        with self._lock:
            found = self._entries.get(reference_id)
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            self._entries.move_to_end(reference_id)
            return found

    def put(self, reference: Reference) -> Reference:
        """Kept unless it alone exceeds the budget; the least recently used go until the rest fits."""
        with self._lock:
            if reference.id in self._entries or reference.cost > self.budget_bytes:
                return reference
            self._entries[reference.id] = reference
            self.bytes += reference.cost
            while self.bytes > self.budget_bytes:
                _, gone = self._entries.popitem(last=False)
                self.bytes -= gone.cost
            return reference

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, reference_id: int) -> bool:
        return reference_id in self._entries


def prepare(reference_id: int, frame: bytes, *, level: int) -> Reference:
    """A reference row's frame decompressed and digested: blocking, for the parser thread when large."""
    body = decompress(frame)
    return Reference(reference_id, body, dictionary(body, level=level))
