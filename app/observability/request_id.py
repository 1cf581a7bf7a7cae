"""The id of one request (or WebSocket connection): the caller's `x-request-id` when it is sane, else a new one; every
log line written while the request runs carries it (a context variable, so concurrent requests never mix)."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator

import structlog

HEADER = "x-request-id"
_SANE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")  # what a balancer or client would send: no spaces, short


def request_id(offered: str | None) -> str:
    """`offered` when it is a plausible id (another hop's, so logs join up), else a fresh random one."""
    return offered if offered is not None and _SANE.fullmatch(offered) else uuid.uuid4().hex


@contextlib.contextmanager
def bound(value: str) -> Iterator[None]:
    """Every log line inside, structlog's or the standard library's, carries `request_id`."""
    with structlog.contextvars.bound_contextvars(request_id=value):
        yield


def current() -> str | None:
    """The id bound to what runs now (an HTTP request, or a WebSocket connection and its operations), if any."""
    found = structlog.contextvars.get_contextvars().get("request_id")
    return str(found) if found else None
