"""Fetch one feed over HTTP: conditional GET, streamed size cap on the decoded body, redirects followed hop by hop,
one deadline for all of it.

Every connection goes through the guarded transport (app/ingest/transport.py), so no hop reaches a non-public
address whatever DNS says at that moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urljoin

import httpx

from app.ingest.addresses import AddressRefused, UnusableURL, url_target
from app.ingest.content_coding import CodingBroken, CodingRefused, decoded
from app.ingest.hints import parse_retry_after
from app.ingest.transport import NameNotResolved, guarded_transport, request_to
from app.settings import Settings

ACCEPT = "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, */*;q=0.5"
TRANSIENT_STATUS = frozenset({408, 425, 500, 502, 504})
THROTTLE_STATUS = frozenset({429, 503})
GONE_STATUS = frozenset({404, 410})
PERMANENT_REDIRECTS = frozenset({301, 308})
HINT_HEADERS = ("cache-control", "expires", "retry-after")
# The ways the network fails, as the fetch log and the metrics count them (app/observability/work.py)
NETWORK_FAILURES = ("dns", "connect", "tls", "timeout", "protocol")
TRANSIENT_FAILURES = frozenset({"dns", "connect", "timeout", "protocol"})  # a bad certificate stays bad


class FetchError(Exception):
    """A fetch that produced no feed body; `error_class` is what the fetch log counts."""

    def __init__(
        self, error_class: str, message: str, *, status_code: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.status_code = status_code
        self.retry_after_s = retry_after_s

    @property
    def transient(self) -> bool:
        """Worth another attempt in seconds: the network or the server hiccuped."""
        return self.error_class in TRANSIENT_FAILURES or self.status_code in TRANSIENT_STATUS

    @property
    def throttled(self) -> bool:
        """The publisher asked us to slow down: back off, but it is no strike against the source."""
        return self.status_code in THROTTLE_STATUS

    @property
    def gone(self) -> bool:
        return self.status_code in GONE_STATUS


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    max_body_bytes: int
    max_redirects: int
    total_s: float = 60.0  # the whole fetch, every hop and the body's last byte (NEWSAGG_FETCH_TOTAL_SECONDS)

    @classmethod
    def from_settings(
        cls, settings: Settings, *, max_body_bytes: int | None = None, max_redirects: int | None = None
    ) -> FetchPolicy:
        """A feed's policy (`fetch_max_body_bytes`, `fetch_max_redirects`), or another kind of document's with its
        own caps; every kind has the one deadline, `fetch_total_seconds`."""
        body = settings.fetch_max_body_bytes if max_body_bytes is None else max_body_bytes
        redirects = settings.fetch_max_redirects if max_redirects is None else max_redirects
        return cls(body, redirects, settings.fetch_total_seconds)


@dataclass(frozen=True, slots=True)
class FetchedFeed:
    status_code: int
    final_url: str
    body: bytes
    content_type: str | None
    etag: str | None
    last_modified: str | None
    duration_ms: int
    permanent_url: str | None = None  # where the leading run of 301/308 redirects led, if any
    hints: dict[str, str] = field(default_factory=dict)  # Cache-Control, Expires, Retry-After
    links: dict[str, str] = field(default_factory=dict)  # HTTP Link header by rel: hub, self (WebSub)
    headers: dict[str, str] = field(default_factory=dict)  # every response header, as the archive keeps them

    @property
    def not_modified(self) -> bool:
        return self.status_code == 304


def new_http_client(settings: Settings) -> httpx.AsyncClient:
    """One per worker process: pooled connections across all the sources it fetches."""
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
    return httpx.AsyncClient(
        transport=guarded_transport(allow_loopback=settings.allow_loopback_sources, limits=limits),
        timeout=httpx.Timeout(settings.fetch_timeout_seconds),
        headers={"User-Agent": settings.user_agent, "Accept": ACCEPT, "Accept-Encoding": "gzip, deflate, br"},
        follow_redirects=False,
    )


async def fetch_feed(
    client: httpx.AsyncClient,
    url: str,
    policy: FetchPolicy,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
    now: datetime | None = None,
) -> FetchedFeed:
    """The feed at `url`, within `policy.total_s` all told: the timeout of the client bounds each wait only, so a
    server dripping a byte at a time would otherwise hold the job until the queue killed it, recording nothing."""
    try:
        async with asyncio.timeout(policy.total_s):
            return await _fetch_hops(client, url, policy, etag=etag, last_modified=last_modified, now=now)
    except TimeoutError as error:
        raise FetchError("timeout", f"no whole answer from {url} within {policy.total_s:g} s") from error


async def _fetch_hops(
    client: httpx.AsyncClient,
    url: str,
    policy: FetchPolicy,
    *,
    etag: str | None,
    last_modified: str | None,
    now: datetime | None,
) -> FetchedFeed:
    started = time.perf_counter()
    headers = {k: v for k, v in (("If-None-Match", etag), ("If-Modified-Since", last_modified)) if v}
    permanent_url: str | None = None
    only_permanent_so_far = True
    for _hop in range(policy.max_redirects + 1):
        response = await _send(client, url, headers)
        try:
            if response.is_redirect and "location" in response.headers:
                url = urljoin(url, response.headers["location"])
                only_permanent_so_far &= response.status_code in PERMANENT_REDIRECTS
                permanent_url = url if only_permanent_so_far else permanent_url
                continue
            body = await _read_capped(response, policy.max_body_bytes) if response.status_code == 200 else b""
        finally:
            await response.aclose()
        if response.status_code not in (200, 304):
            raise FetchError(
                "http_status",
                f"HTTP {response.status_code}",
                status_code=response.status_code,
                retry_after_s=parse_retry_after(response.headers.get("retry-after"), now),
            )
        return FetchedFeed(
            status_code=response.status_code,
            final_url=url,
            body=body,
            content_type=response.headers.get("content-type"),
            etag=response.headers.get("etag"),
            last_modified=response.headers.get("last-modified"),
            duration_ms=int((time.perf_counter() - started) * 1000),
            permanent_url=permanent_url,
            hints={name: response.headers[name] for name in HINT_HEADERS if name in response.headers},
            links=_links(url, response),
            headers=dict(response.headers),
        )
    raise FetchError("too_many_redirects", f"more than {policy.max_redirects} redirects")


def refused(error: AddressRefused) -> FetchError:
    """A refused URL as a fetch failure: `invalid_url` when it names no address at all, `address_refused` when the
    address is not one to fetch from."""
    return FetchError("invalid_url" if isinstance(error, UnusableURL) else "address_refused", str(error))


def _links(url: str, response: httpx.Response) -> dict[str, str]:
    """The Link header's hub and self, absolute; a malformed one is no link (the publisher's mistake is not a failed
    fetch)."""
    links = {}
    for rel, link in response.links.items():
        if rel in ("hub", "self"):
            with contextlib.suppress(ValueError):
                links[rel] = urljoin(url, link["url"])
    return links


async def _send(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> httpx.Response:
    try:
        url_target(url)  # what httpx would quietly mend (a space in the host, percent-encoded) is refused too
        return await client.send(request_to(client, "GET", url, headers=headers), stream=True)
    except AddressRefused as error:
        raise refused(error) from error
    except httpx.UnsupportedProtocol as error:
        raise FetchError("address_refused", f"only http(s) is fetched: {error}") from error
    except httpx.HTTPError as error:
        raise FetchError(network_failure(error), f"{type(error).__name__} fetching {url}: {error}") from error


def network_failure(error: BaseException) -> str:
    """Which of NETWORK_FAILURES an httpx error is: the causes it was raised from tell (httpx wraps httpcore's
    exception, which wraps the resolver's or ssl's)."""
    if isinstance(error, httpx.TimeoutException):
        return "timeout"
    causes: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and len(causes) < 10:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any(isinstance(c, NameNotResolved) for c in causes):
        return "dns"
    if any(isinstance(c, ssl.SSLError | ssl.CertificateError) for c in causes):
        return "tls"
    if isinstance(error, httpx.RemoteProtocolError | httpx.LocalProtocolError):
        return "protocol"
    return "connect"


async def _read_capped(response: httpx.Response, cap: int) -> bytes:
    """The decoded body, aborted as soon as it passes `cap`: the bytes off the wire are decoded here a bounded piece
    at a time (app/ingest/content_coding.py), so a compression bomb stops at the cap, not at RAM."""
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise FetchError("too_large", f"declared {declared} bytes, cap is {cap}")
    chunks: list[bytes] = []
    size = 0
    try:
        async with contextlib.aclosing(decoded(response.aiter_raw(), response.headers.get("content-encoding"))) as body:
            async for chunk in body:
                size += len(chunk)
                if size > cap:
                    raise FetchError("too_large", f"body passed the {cap}-byte cap")
                chunks.append(chunk)
    except CodingRefused as error:
        raise FetchError("unsupported_encoding", str(error)) from error
    except CodingBroken as error:
        raise FetchError("decoding", f"bad content encoding: {error}") from error
    except httpx.TimeoutException as error:
        raise FetchError("timeout", "timed out reading the body") from error
    except httpx.HTTPError as error:
        raise FetchError(network_failure(error), f"{type(error).__name__} while reading the body: {error}") from error
    return b"".join(chunks)
