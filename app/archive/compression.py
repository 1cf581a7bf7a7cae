"""zstd frames for archived bodies (no I/O), whole or compressed against a reference body.

A feed changes little from one fetch to the next: compressed with a recent body of its source as a raw-content
dictionary, a body takes about half the bytes it takes alone (bench/archive.py; a dictionary trained on a source's
bodies gained about a tenth). Frames carry their content size and a checksum, so a damaged row fails loudly instead
of replaying garbage."""

from __future__ import annotations

from functools import lru_cache

import zstandard


class DamagedBody(ValueError):
    """An archived body that does not decompress."""


def compress(body: bytes, *, level: int, reference: bytes | None = None) -> bytes:
    if reference is None:
        return _compressor(level).compress(body)
    return zstandard.ZstdCompressor(level=level, dict_data=_dictionary(reference), write_checksum=True,
                                    write_content_size=True).compress(body)  # fmt: skip


def decompress(frame: bytes, reference: bytes | None = None) -> bytes:
    """`reference`: the body `frame` was compressed against (None for a body stored whole)."""
    try:
        return zstandard.ZstdDecompressor(dict_data=_dictionary(reference) if reference else None).decompress(frame)
    except zstandard.ZstdError as error:
        raise DamagedBody(str(error)) from error


def _dictionary(reference: bytes) -> zstandard.ZstdCompressionDict:
    return zstandard.ZstdCompressionDict(reference, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


@lru_cache(maxsize=4)  # one per level in use; used from one thread (the event loop) at a time
def _compressor(level: int) -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(level=level, write_checksum=True, write_content_size=True)
