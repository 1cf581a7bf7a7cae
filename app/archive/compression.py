"""zstd frames for archived bodies (no I/O), whole or compressed against a reference body.

A feed changes little from one fetch to the next: compressed with a recent body of its source as a raw-content
dictionary, a body takes about half the bytes it takes alone (bench/archive.py; a dictionary trained on a source's
bodies gained about a tenth). Frames carry their content size and a checksum, so a damaged row fails loudly instead
of replaying garbage. Every function here is blocking and thread-safe: a prepared dictionary is read-only once made
(zstd's digested dictionaries are shared between threads by design), and compressors are made per call or per thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import zstandard

CHUNK = 64 * 1024  # what a streamed body is written out in


class DamagedBody(ValueError):
    """An archived body that does not decompress."""


def dictionary(reference: bytes, *, level: int | None = None) -> zstandard.ZstdCompressionDict:
    """A reference body as a zstd dictionary, digested once for compressing at `level` when given (the costly part
    of compressing against it: done once per reference, not per body)."""
    prepared = zstandard.ZstdCompressionDict(reference, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    if level is not None:
        prepared.precompute_compress(level=level)
    return prepared


def compress(body: bytes, *, level: int, reference: zstandard.ZstdCompressionDict | None = None) -> bytes:
    """`reference`: a dictionary() made of the body to compress against (prepared at `level`), or None."""
    if reference is None:
        return _compressor(level).compress(body)
    return zstandard.ZstdCompressor(level=level, dict_data=reference, write_checksum=True,
                                    write_content_size=True).compress(body)  # fmt: skip


def decompress(frame: bytes, reference: zstandard.ZstdCompressionDict | None = None) -> bytes:
    """`reference`: the dictionary of the body `frame` was compressed against (None for a body stored whole)."""
    try:
        return zstandard.ZstdDecompressor(dict_data=reference).decompress(frame)
    except zstandard.ZstdError as error:
        raise DamagedBody(str(error)) from error


def stream(frame: bytes, reference: zstandard.ZstdCompressionDict | None = None) -> Iterator[bytes]:
    """The body in chunks of at most CHUNK bytes, never whole in memory; DamagedBody when the frame is (a truncated
    or altered frame is found out at the chunk it breaks, its checksum at the end)."""
    try:
        yield from zstandard.ZstdDecompressor(dict_data=reference).read_to_iter(frame, write_size=CHUNK)
    except zstandard.ZstdError as error:
        raise DamagedBody(str(error)) from error


_local = threading.local()


def _compressor(level: int) -> zstandard.ZstdCompressor:
    """One per thread and level: a ZstdCompressor may not be used by two threads at once."""
    found: dict[int, zstandard.ZstdCompressor] = _local.__dict__.setdefault("compressors", {})
    if level not in found:
        found[level] = zstandard.ZstdCompressor(level=level, write_checksum=True, write_content_size=True)
    return found[level]
