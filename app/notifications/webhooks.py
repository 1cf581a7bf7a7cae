"""Sending one webhook: a signed JSON POST through the feed fetcher's SSRF guard (every connection, on every hop,
to a public address only), with timeouts, no redirects followed, and at most `webhook_response_max_bytes` of the
receiver's answer read."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from app.ingest.addresses import AddressRefused
from app.ingest.transport import guarded_transport
from app.notifications.signing import HEADER, sign
from app.settings import Settings


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    permanent: bool  # never worth retrying (the address is refused)
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


async def post(client: httpx.AsyncClient, url: str, secret: str, key: str, body: bytes,
               response_cap: int) -> Outcome:  # fmt: skip
    started = time.perf_counter()
    headers = {HEADER: sign(secret, body), "Newsagg-Delivery": key}

    def outcome(delivered: bool, code: int | None, error: str | None, permanent: bool = False) -> Outcome:
        return Outcome(delivered, permanent, code, error, (time.perf_counter() - started) * 1000)

    try:
        async with client.stream("POST", url, content=body, headers=headers) as response:
            read = 0
            async for chunk in response.aiter_raw():
                read += len(chunk)
                if read >= response_cap:
                    break
            if 200 <= response.status_code < 300:
                return outcome(True, response.status_code, None)
            return outcome(False, response.status_code, f"HTTP {response.status_code}")
    except AddressRefused as error:
        return outcome(False, None, f"refused: {error}", permanent=True)
    except httpx.HTTPError as error:
        return outcome(False, None, f"{type(error).__name__}: {error}"[:500])
