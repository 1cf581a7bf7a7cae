"""Fetch one feed over HTTP: conditional GET, size cap, redirects checked hop by hop against SSRF."""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from app.ingest.addresses import AddressRefused, check_url_target
from app.settings import Settings

ACCEPT = "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, */*;q=0.5"
_TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class FetchError(Exception):
    """A fetch that produced no feed body; `error_class` is what the fetch log counts."""

    def __init__(self, error_class: str, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.status_code = status_code

    @property
    def transient(self) -> bool:
        return self.error_class in {"timeout", "connect"} or self.status_code in _TRANSIENT_STATUS


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    max_body_bytes: int
    max_redirects: int
    allow_loopback: bool

    @classmethod
    def from_settings(cls, settings: Settings) -> FetchPolicy:
        return cls(settings.fetch_max_body_bytes, settings.fetch_max_redirects, settings.allow_loopback_sources)


@dataclass(frozen=True, slots=True)
class FetchedFeed:
    status_code: int
    final_url: str
    body: bytes
    content_type: str | None
    etag: str | None
    last_modified: str | None
    duration_ms: int

    @property
    def not_modified(self) -> bool:
        return self.status_code == 304


def new_http_client(settings: Settings) -> httpx.AsyncClient:
    """One per worker process: connection pooling across all the sources it fetches."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(settings.fetch_timeout_seconds),
        headers={"User-Agent": settings.user_agent, "Accept": ACCEPT},
        follow_redirects=False,
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
    )


async def fetch_feed(
    client: httpx.AsyncClient,
    url: str,
    policy: FetchPolicy,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
) -> FetchedFeed:
    started = time.perf_counter()
    headers = {k: v for k, v in (("If-None-Match", etag), ("If-Modified-Since", last_modified)) if v}
    for _hop in range(policy.max_redirects + 1):
        try:
            await check_url_target(url, allow_loopback=policy.allow_loopback)
        except AddressRefused as error:
            raise FetchError("address_refused", str(error)) from error
        request = client.build_request("GET", url, headers=headers)
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException as error:
            raise FetchError("timeout", f"timed out fetching {url}") from error
        except httpx.HTTPError as error:
            raise FetchError("connect", f"{type(error).__name__}: {error}") from error
        try:
            if response.is_redirect and "location" in response.headers:
                url = urljoin(url, response.headers["location"])
                continue
            body = await _read_capped(response, policy.max_body_bytes) if response.status_code == 200 else b""
        finally:
            await response.aclose()
        if response.status_code not in (200, 304):
            raise FetchError("http_status", f"HTTP {response.status_code}", status_code=response.status_code)
        return FetchedFeed(
            status_code=response.status_code,
            final_url=url,
            body=body,
            content_type=response.headers.get("content-type"),
            etag=response.headers.get("etag"),
            last_modified=response.headers.get("last-modified"),
            duration_ms=int((time.perf_counter() - started) * 1000),
        )
    raise FetchError("too_many_redirects", f"more than {policy.max_redirects} redirects")


async def _read_capped(response: httpx.Response, cap: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise FetchError("too_large", f"declared {declared} bytes, cap is {cap}")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > cap:
                raise FetchError("too_large", f"body passed the {cap}-byte cap")
            chunks.append(chunk)
    except httpx.TimeoutException as error:
        raise FetchError("timeout", "timed out reading the body") from error
    except httpx.HTTPError as error:
        raise FetchError("connect", f"{type(error).__name__} while reading the body: {error}") from error
    return b"".join(chunks)
