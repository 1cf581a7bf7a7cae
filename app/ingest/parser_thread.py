"""The one thread per process that parses feeds, and compresses or decompresses archived bodies, off the event loop.

feedparser is pure Python: more threads would only fight over the GIL (with each other and with the event loop), so
each process parses in one thread of its own. zstd work on a large archived body (app/archive) takes that thread too:
it releases the GIL, but queued behind parsing it keeps the process's CPU use where it was, one core for parsing and
archiving beside the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

PARSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="feedparser")


async def in_parser_thread(function: Callable[..., T], *args: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(PARSER, function, *args)
