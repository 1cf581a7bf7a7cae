"""`newsagg eval extraction`: article text extraction measured on the article extraction benchmark's pages
(`html/<id>.html.gz` and `ground-truth.json`, scrapinghub/article-extraction-benchmark) with its metric
(app/extraction/metric.py); `--compare` runs readability-lxml (the `compare` extra) on the same pages beside it."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable
from pathlib import Path

from app.extraction.extractor import extract_article
from app.extraction.metric import Counts, scores, shingle_matching

Extractor = Callable[[bytes, str | None], str]


def shipped(page: bytes, url: str | None) -> str:
    found = extract_article(page, url)
    return found.text if found else ""


def readability_lxml(page: bytes, url: str | None) -> str:
    import lxml.html  # type: ignore[import-untyped]

    try:
        from readability import Document  # the compare extra
    except ImportError as missing:
        needed = "newsagg eval extraction --compare needs readability-lxml: pip install -e '.[compare]'"
        raise SystemExit(needed) from missing

    summary = Document(page.decode("utf-8", "replace"), url=url).summary(html_partial=True)
    return str(lxml.html.fromstring(summary).text_content()) if summary.strip() else ""


def read_pages(folder: Path) -> list[tuple[str, bytes, str | None, str]]:
    """(id, page bytes, URL, true article body) of each page of the benchmark's folder."""
    truth = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    return [(key, gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes()), item.get("url"),
             item.get("articleBody", "")) for key, item in sorted(truth.items())]  # fmt: skip


def measure(pages: list[tuple[str, bytes, str | None, str]], extractors: dict[str, Extractor]) -> dict[str, object]:
    """Each extractor's scores, empty pages and time per page; the extractors take turns page by page, so that the
    machine's other load slows them alike."""
    for extractor in extractors.values():
        extractor(pages[0][1], pages[0][2])  # warm up: imports and models load once per process
    counts: dict[str, list[Counts]] = {name: [] for name in extractors}
    empty: dict[str, list[str]] = {name: [] for name in extractors}
    elapsed = dict.fromkeys(extractors, 0.0)
    for key, page, url, body in pages:
        for name, extractor in extractors.items():
            started = time.perf_counter()
            text = extractor(page, url)
            elapsed[name] += time.perf_counter() - started
            if not text.strip():
                empty[name].append(key)
            counts[name].append(shingle_matching(body, text))
    return {
        name: {**{k: round(v, 4) for k, v in scores(counts[name]).items()}, "empty_pages": len(empty[name]),
               "empty": empty[name], "ms_per_page": round(1000 * elapsed[name] / len(pages), 1)}
        for name in extractors
    }  # fmt: skip


def evaluate(folder: Path, *, compare: bool = False) -> dict[str, object]:
    extractors: dict[str, Extractor] = {"trafilatura": shipped}
    if compare:
        extractors["readability_lxml"] = readability_lxml
    pages = read_pages(folder)
    return {"pages": len(pages), **measure(pages, extractors)}
