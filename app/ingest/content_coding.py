"""A response body's Content-Encoding undone a piece at a time, each of about PIECE_BYTES at most (pure).

httpx decodes each chunk off the wire whole: 405 bytes of brotli become 256 MiB in one call, before any size cap can
look at them. Here every decompressor is asked for at most PIECE_BYTES per call, so the reader's cap stops a bomb
at the cap. One coding (gzip, deflate, br) or none is read; another compression, or several stacked, is refused (a
label that names no compression, such as "UTF-8", is read as none).
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncGenerator, AsyncIterable, Iterator
from typing import Protocol

import brotli

PIECE_BYTES = 64 * 1024
# The content codings of the IANA registry (and the x- aliases still seen) that compress or encrypt: a body in any of
# them is not the document; gzip, deflate and br are undone here
_COMPRESSIONS = frozenset({"gzip", "x-gzip", "deflate", "br", "compress", "x-compress", "zstd", "exi", "pack200-gzip",
                           "aes128gcm", "dcb", "dcz", "bzip2", "x-bzip2", "lzma", "xz"})  # fmt: skip


class CodingRefused(Exception):
    """A Content-Encoding that is not read: unknown, or more than one."""


class CodingBroken(Exception):
    """A body that is not what its Content-Encoding says."""


class _Decoder(Protocol):
    def decode(self, data: bytes) -> Iterator[bytes]: ...
    def flush(self) -> Iterator[bytes]: ...


class _Identity:
    def decode(self, data: bytes) -> Iterator[bytes]:
        yield data

    def flush(self) -> Iterator[bytes]:
        yield from ()


class _Zlib:
    """gzip, or deflate: zlib-wrapped as RFC 9110 says, or raw as some servers send it (httpx tries both too)."""

    def __init__(self, wbits: int, *, raw_fallback: bool = False) -> None:
        self._inflate = zlib.decompressobj(wbits)
        self._raw_fallback = raw_fallback

    def decode(self, data: bytes) -> Iterator[bytes]:
        try:
            while True:
                piece = self._inflate.decompress(data, PIECE_BYTES)
                self._raw_fallback = False
                data = self._inflate.unconsumed_tail
                yield piece
                if not data and len(piece) < PIECE_BYTES:  # a full piece may leave output pending in zlib
                    return
        except zlib.error as error:
            if not self._raw_fallback:
                raise CodingBroken(str(error)) from error
            self._raw_fallback = False
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
            yield from self.decode(data)

    def flush(self) -> Iterator[bytes]:
        try:
            yield self._inflate.flush()  # what is left is less than one input chunk's worth
        except zlib.error as error:
            raise CodingBroken(str(error)) from error


class _Brotli:
    def __init__(self) -> None:
        self._decompressor = brotli.Decompressor()

    def decode(self, data: bytes) -> Iterator[bytes]:
        try:
            piece = self._decompressor.process(data, output_buffer_limit=PIECE_BYTES)
            yield piece
            while piece:  # output may be pending even when more input would be accepted: drained when none comes
                piece = self._decompressor.process(b"", output_buffer_limit=PIECE_BYTES)
                yield piece
        except brotli.error as error:
            raise CodingBroken(str(error)) from error

    def flush(self) -> Iterator[bytes]:
        yield from ()


def decoder_for(content_encoding: str | None) -> _Decoder:
    """The decoder of a Content-Encoding. A label that names no compression (servers send "UTF-8", "none", "binary")
    is read as identity, as browsers and httpx read it; a compression this reader does not undo (compress, zstd, …),
    or two stacked, is refused."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
    codings = [c for c in codings if c in _COMPRESSIONS]
    if len(codings) > 1:
        raise CodingRefused(f"stacked content encodings are not read: {content_encoding}")
    coding = codings[0] if codings else "identity"
    if coding in ("gzip", "x-gzip"):
        return _Zlib(zlib.MAX_WBITS | 16)
    if coding == "deflate":
        return _Zlib(zlib.MAX_WBITS, raw_fallback=True)
    if coding == "br":
        return _Brotli()
    if coding == "identity":
        return _Identity()
    raise CodingRefused(f"unknown content encoding: {content_encoding}")


async def decoded(raw: AsyncIterable[bytes], content_encoding: str | None) -> AsyncGenerator[bytes]:
    """The body of `raw` (the bytes as they came off the wire), decoded a piece at a time."""
    decoder = decoder_for(content_encoding)
    async for chunk in raw:
        for piece in decoder.decode(chunk):
            yield piece
    for piece in decoder.flush():
        yield piece
