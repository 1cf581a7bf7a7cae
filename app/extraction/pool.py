"""Extraction in a process of its own: trafilatura and lxml are CPU-bound and hold the GIL, so in a thread they
slowed the crawl sharing the worker's event loop (bench/article_text.py: the crawl tick's p50 2.9 times longer with
article fetching on). One process per worker process, started on first use ("spawn": the worker has threads and a
running loop that fork would copy) at a lower CPU priority (os.nice), and replaced when a page crashes it or takes
longer than its time limit (a pathological page must not hold the queue for good).

Pages go to it one at a time, so a page's time limit counts its own extraction only, not the pages queued before it
nor the process's start (it reads a sample page before it is handed any)."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
import weakref
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from app.entities.extractor import Entity
from app.extraction.text import ExtractedArticle

log = logging.getLogger(__name__)
_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

PageReading = tuple[ExtractedArticle | None, list[Entity]]


class ExtractionCrashed(RuntimeError):
    """The extraction process died on a page (it is replaced for the next one)."""


class ExtractionTimedOut(RuntimeError):
    """A page's extraction took longer than its limit: the process was killed (and is replaced for the next one)."""


def read_page(body: bytes, url: str, title: str, declared_language: str | None) -> PageReading:
    """The article in the page and the entities its headline and opening name (runs in the extraction process,
    which alone imports trafilatura)."""
    from app.entities.extractor import extract as extract_entities
    from app.extraction.extractor import extract_article

    found = extract_article(body, url, declared_language)
    if found is None:
        return None, []
    return found, extract_entities(title, found.text, found.language)  # its opening: see MAX_TEXT there


_SAMPLE = (
    "<html><head><title>Harbour wall</title></head><body><article><h1>Council votes to rebuild the harbour wall"
    "</h1>" + "<p>The council of Dover met on Tuesday and voted to rebuild the harbour wall that storms damaged "
    "twice last winter, at a cost the mayor called reasonable.</p>" * 6 + "</article></body></html>"
).encode()


def prepare_process(nice: int) -> None:
    """The extraction process's start: a lower CPU priority, then a first page read, which loads what the extractor
    and the entity model load on first use (over a second, more on a busy host: no page's time limit pays it)."""
    if nice:
        os.nice(nice)
    read_page(_SAMPLE, "https://warm-up.invalid/", "Council votes to rebuild the harbour wall", "en")


def _ready() -> int:
    return os.getpid()


async def read_page_apart(
    body: bytes, url: str, title: str, declared_language: str | None, *, timeout_s: float, nice: int = 0
) -> PageReading:
    """`read_page` in the extraction process, abandoned after `timeout_s` of extraction (ExtractionTimedOut)."""
    loop = asyncio.get_running_loop()
    async with _gate(loop):
        pool = await _ready_pool(loop, nice)
        try:
            return await asyncio.wait_for(loop.run_in_executor(pool, read_page, body, url, title, declared_language),
                                          timeout_s)  # fmt: skip
        except TimeoutError as error:
            _replace(pool)
            raise ExtractionTimedOut(f"extraction took longer than {timeout_s:g} s") from error
        except BrokenProcessPool as error:
            _replace(pool)
            raise ExtractionCrashed(str(error)) from error


def _gate(loop: asyncio.AbstractEventLoop) -> asyncio.Lock:
    """One page at a time in this loop's extraction process."""
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = asyncio.Lock()
    return gate


async def _ready_pool(loop: asyncio.AbstractEventLoop, nice: int) -> ProcessPoolExecutor:
    global _pool
    with _lock:
        pool, fresh = _pool, _pool is None
        if pool is None:
            context = multiprocessing.get_context("spawn")
            pool = _pool = ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=prepare_process,
                                               initargs=(nice,))  # fmt: skip
    if fresh:
        try:
            pid = await loop.run_in_executor(pool, _ready)
        except BrokenProcessPool as error:
            _replace(pool)
            raise ExtractionCrashed(f"the extraction process did not start: {error}") from error
        log.info("extraction process %d started (nice +%d)", pid, nice)
    return pool


def _replace(pool: ProcessPoolExecutor) -> None:
    """Kill `pool`'s process (it may be stuck in a page) and let the next page start another."""
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    processes = list((pool._processes or {}).values())  # no public way to stop a running task (3.14 adds one)
    for process in processes:
        process.kill()
    for process in processes:
        process.join(5)  # reaped at once (SIGKILL is not refused): no zombie left behind
    pool.shutdown(wait=False, cancel_futures=True)


def extraction_pid() -> int | None:
    """The extraction process's pid; None before the first page, or after one was abandoned."""
    with _lock:
        processes = list(_pool._processes or {}) if _pool is not None else []
    return processes[0] if processes else None


def close_extraction_pool() -> None:
    """Stop the extraction process (at the worker's shutdown)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
