"""An archived body written out as it is decompressed (no I/O of its own beyond the stream it is given): cut at a
limit, and on a terminal with its control characters shown escaped, so a hostile body cannot drive the terminal."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import BinaryIO

# C0 controls but tab, newline and carriage return; DEL; and C1 controls as UTF-8 (U+0080-U+009F: \xc2\x80-\x9f)
_CONTROLS = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")


def escaped(chunk: bytes) -> bytes:
    """Control characters as \\xNN (an escape sequence in a body would otherwise reach the terminal)."""
    return _CONTROLS.sub(lambda m: b"".join(b"\\x%02x" % byte for byte in m.group()), chunk)


def written_out(chunks: Iterable[bytes], out: BinaryIO, *, limit: int | None, terminal: bool) -> int:
    """Bytes of the body written (before escaping): all, or the first `limit`. Reads no further than it writes."""
    written = 0
    for chunk in chunks:
        if limit is not None and written + len(chunk) > limit:
            chunk = chunk[: limit - written]
        out.write(escaped(chunk) if terminal else chunk)
        written += len(chunk)
        if limit is not None and written >= limit:
            break
    return written
