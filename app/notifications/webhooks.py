"""Sending one webhook: a signed JSON POST through the feed fetcher's SSRF guard (every connection to a public
address only), within one deadline (`webhook_timeout_seconds`, the whole exchange), no redirects followed, and at
most `webhook_response_max_bytes` of the receiver's answer read."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from app.ingest.addresses import AddressRefused, UnusableURL, url_target
from app.ingest.transport import guarded_transport, request_to
from app.notifications.signing import HEADER, sign
from app.settings import Settings


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    permanent: bool  # never worth retrying (the address is refused, the URL is invalid)
    status_code: int | None
    error: str | None
    duration_ms: float


def webhook_client(settings: Settings) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=settings.webhook_concurrency, max_keepalive_connections=20)
    return httpx.AsyncClient(
        transport=guarded_transport(allow_loopback=settings.webhooks_allow_loopback, limits=limits),
        timeout=httpx.Timeout(settings.webhook_timeout_seconds),
        headers={"User-Agent": settings.user_agent, "Content-Type": "application/json"},
        follow_redirects=False,
    )


def body_of(payload: dict[str, Any], key: str, event_id: int) -> bytes:
    return json.dumps({"id": key, "event_id": event_id, **payload}, separators=(",", ":")).encode()


async def post(client: httpx.AsyncClient, url: str, secret: str, key: str, body: bytes, response_cap: int,
               deadline: float) -> Outcome:  # fmt: skip
    """One POST, all of it within `deadline` seconds: a receiver that stalls, or drips its status line and headers,
    fails with a timeout. A 2xx status is success as soon as it arrives; the body is then read (and thrown away)
    only up to `response_cap` bytes and only while the deadline lasts, so a receiver that drips or floods its body
    holds the worker no longer. A redirect is not followed (it could point anywhere, the SSRF guard's address
    included): it fails with its target named."""
    started = time.perf_counter()

    def outcome(delivered: bool, code: int | None, error: str | None, permanent: bool = False) -> Outcome:
        return Outcome(delivered, permanent, code, error, (time.perf_counter() - started) * 1000)

    try:
        async with asyncio.timeout(deadline):
            url_target(url)  # what httpx would quietly mend (a space in the host) or fail on later (port 0)
            request = request_to(client, "POST", url, content=body, headers={HEADER: sign(secret, body),
                                                                             "Newsagg-Delivery": key})  # fmt: skip
            response = await client.send(request, stream=True)
    except UnusableURL as error:  # stored before the API checked URLs this way
        return outcome(False, None, f"invalid URL: {error}"[:500], permanent=True)
    except (TimeoutError, httpx.TimeoutException):
        return outcome(False, None, f"timed out: no status and headers within {deadline:g} s")
    except AddressRefused as error:
        return outcome(False, None, f"refused: {error}", permanent=True)
    except httpx.HTTPError as error:
        return outcome(False, None, f"{type(error).__name__}: {error}"[:500])
    await _discard(response, response_cap, started + deadline - time.perf_counter())
    code = response.status_code
    if response.is_redirect:
        return outcome(False, code, f"HTTP {code}: redirect to {response.headers.get('location', '?')[:300]} not "
                                    "followed (an endpoint must answer itself)")  # fmt: skip
    return outcome(200 <= code < 300, code, None if 200 <= code < 300 else f"HTTP {code}")


async def _discard(response: httpx.Response, cap: int, seconds: float) -> None:
    """Reads at most `cap` bytes of the body for at most `seconds`, then closes the response."""
    read = 0
    try:
        async with asyncio.timeout(max(seconds, 0)):
            async for chunk in response.aiter_raw():
                read += len(chunk)
                if read >= cap:
                    break
    except (TimeoutError, httpx.HTTPError):
        pass  # the status is the answer; a body cut short changes nothing
    finally:
        await response.aclose()
