"""What the API counts of its requests: HTTP requests by route and status, GraphQL operations by name and outcome (ok,
or the first error's code), their latency, and errors by code.

Labels are bounded whatever clients send: an operation is named after the documents in `graphql/` or one of the
first OTHER_NAMES other names this process saw, else "other"; anonymous operations are "anonymous"; a code that is
not SCREAMING_SNAKE_CASE is "ERROR"; routes are the app's route templates ("unmatched" for none).
"""

from __future__ import annotations

import functools
import re
import threading
from pathlib import Path

from prometheus_client import Counter, Histogram

DOCUMENTS = Path(__file__).resolve().parents[2] / "graphql"
OTHER_NAMES = 100
OK = "ok"
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,63}")
_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,47}")
_DEFINITION = re.compile(r"\b(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

HTTP_REQUESTS = Counter("newsagg_http_requests", "HTTP requests answered.", ["route", "method", "status"])
HTTP_SECONDS = Histogram(
    "newsagg_http_request_duration_seconds", "From request to the end of the response.", ["route", "method"]
)
OPERATIONS = Counter(
    "newsagg_graphql_operations", "GraphQL operations by name, type and outcome (ok or the first error's code).",
    ["operation", "type", "outcome"],
)  # fmt: skip
OPERATION_SECONDS = Histogram(
    "newsagg_graphql_operation_duration_seconds", "Parse, validation and execution of a query or mutation.",
    ["operation", "type"],
)  # fmt: skip
ERRORS = Counter("newsagg_graphql_errors", "Errors in GraphQL responses, by extensions.code.", ["code"])

_seen: set[str] = set()
_seen_lock = threading.Lock()


@functools.cache
def document_names() -> frozenset[str]:
    """The operation names of the documents clients copy (graphql/*.graphql), when they ship beside the code."""
    texts = (path.read_text() for path in sorted(DOCUMENTS.glob("*.graphql"))) if DOCUMENTS.is_dir() else ()
    return frozenset(name for text in texts for name in _DEFINITION.findall(text))


def operation_label(name: str | None) -> str:
    if not name:
        return "anonymous"
    if not _NAME.fullmatch(name):
        return "other"
    if name in document_names() or name in _seen:
        return name
    with _seen_lock:
        if len(_seen) >= OTHER_NAMES:
            return "other"
        _seen.add(name)
    return name


def code_label(code: object) -> str:
    return code if isinstance(code, str) and _CODE.fullmatch(code) else "ERROR"


def route_label(template: str | None, method: str) -> tuple[str, str]:
    return template or "unmatched", method if method in METHODS else "other"


def record_http(template: str | None, method: str, status: int, seconds: float) -> None:
    route, verb = route_label(template, method)
    HTTP_REQUESTS.labels(route, verb, str(status)).inc()
    HTTP_SECONDS.labels(route, verb).observe(seconds)


def record_operation(name: str | None, kind: str, codes: list[str], seconds: float | None) -> None:
    """One operation: `codes` of its errors in order (empty: ok); `seconds` None for a subscription (its lifetime
    is no latency)."""
    operation = operation_label(name)
    OPERATIONS.labels(operation, kind, code_label(codes[0]) if codes else OK).inc()
    for code in codes:
        ERRORS.labels(code_label(code)).inc()
    if seconds is not None:
        OPERATION_SECONDS.labels(operation, kind).observe(seconds)
