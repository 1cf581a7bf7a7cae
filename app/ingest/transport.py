"""An httpx transport that checks the address it actually connects to: SSRF safety that DNS rebinding and
redirects cannot get around, because every new connection, on any hop, passes through here."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from app.ingest.addresses import AddressRefused, UnusableURL, refusal_reason, resolve


class NameNotResolved(httpcore.ConnectError):
    """DNS gave no address for the host: told apart from a refused connection (app/ingest/fetch.py classifies)."""


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """Resolves the host itself, refuses non-public addresses, then connects to a checked address.

    TLS still verifies the certificate against the hostname: httpcore passes the origin's host as SNI.
    """

    def __init__(self, *, allow_loopback: bool) -> None:
        self._allow_loopback = allow_loopback
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if not 0 < port < 65536:  # httpx parses any number; the socket layer would fail on it some other way
            raise UnusableURL(f"port {port} is out of range")
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                addresses = await resolve(host, port)  # UnusableURL for a name no resolver takes
            except OSError as error:
                raise NameNotResolved(f"cannot resolve {host}: {error}") from error
        for address in addresses:
            reason = refusal_reason(address, allow_loopback=self._allow_loopback)
            if reason:
                raise AddressRefused(f"{host} resolves to {address}, a {reason}")
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                last_error = error
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AddressRefused("unix sockets are never fetched from")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def request_to(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> httpx.Request:
    """`client.build_request`, with a URL httpx cannot send to raised as UnusableURL (httpx raises InvalidURL, or
    an IDNA error for an xn-- host it cannot decode: neither is an httpx.HTTPError)."""
    try:
        return client.build_request(method, url, **kwargs)
    except (httpx.InvalidURL, UnicodeError) as error:
        raise UnusableURL(f"not a usable URL: {url[:200]!r}: {error}") from error


def guarded_transport(*, allow_loopback: bool, limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """httpx's transport with its connection pool built on the guarded backend (httpx has no parameter for it)."""
    transport = httpx.AsyncHTTPTransport(limits=limits, trust_env=False)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=GuardedNetworkBackend(allow_loopback=allow_loopback),
    )
    return transport
