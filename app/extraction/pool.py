"""Extraction in a process of its own: trafilatura and lxml are CPU-bound and hold the GIL, so in a thread they
slowed the crawl sharing the worker's event loop (bench/article_text.py: the crawl tick's p50 2.9 times longer with
article fetching on). One process per worker process, started on first use ("spawn": the worker has threads and a
running loop that fork would copy), replaced when a page crashes it."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from app.entities.extractor import Entity
from app.extraction.text import ExtractedArticle

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None

PageReading = tuple[ExtractedArticle | None, list[Entity]]


class ExtractionCrashed(RuntimeError):
    """The extraction process died on a page (it is replaced for the next one)."""


def read_page(body: bytes, url: str, title: str, declared_language: str | None) -> PageReading:
    """The article in the page and the entities its headline and opening name (runs in the extraction process,
    which alone imports trafilatura)."""
    from app.entities.extractor import extract as extract_entities
    from app.extraction.extractor import extract_article

    found = extract_article(body, url, declared_language)
    if found is None:
        return None, []
    return found, extract_entities(title, found.text, found.language)  # its opening: see MAX_TEXT there


async def read_page_apart(body: bytes, url: str, title: str, declared_language: str | None) -> PageReading:
    try:
        return await asyncio.get_running_loop().run_in_executor(_extraction_pool(), read_page, body, url, title,
                                                                declared_language)  # fmt: skip
    except BrokenProcessPool as error:
        close_extraction_pool()
        raise ExtractionCrashed(str(error)) from error


def _extraction_pool() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return _pool


def close_extraction_pool() -> None:
    """Stop the extraction process (at the worker's shutdown, or after it crashed)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
