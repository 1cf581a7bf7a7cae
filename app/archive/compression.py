"""zstd frames for archived bodies (no I/O).

Frames carry their content size and a checksum, so a damaged row fails loudly instead of replaying garbage."""

from __future__ import annotations

from functools import lru_cache

import zstandard


class DamagedBody(ValueError):
    """An archived body that does not decompress."""


def compress(body: bytes, *, level: int) -> bytes:
    return _compressor(level).compress(body)


def decompress(frame: bytes) -> bytes:
    try:
        return zstandard.ZstdDecompressor().decompress(frame)
    except zstandard.ZstdError as error:
        raise DamagedBody(str(error)) from error


@lru_cache(maxsize=4)  # one per level in use; used from one thread (the event loop) at a time
def _compressor(level: int) -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(level=level, write_checksum=True, write_content_size=True)
