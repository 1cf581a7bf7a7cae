"""One Redis pub/sub connection per process, fanned out to any number of local subscribers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from redis.asyncio import Redis

log = logging.getLogger(__name__)

CHANNEL_PREFIX = "newsagg:events:"
SUBSCRIBER_BUFFER = 256


async def publish(redis: Redis, topic: str, payload: dict[str, Any]) -> None:
    await redis.publish(CHANNEL_PREFIX + topic, json.dumps(payload))


class Broadcaster:
    """Subscribers get each event of their topic in order; a subscriber that falls behind loses the oldest."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._queues: dict[str, set[asyncio.Queue[dict[str, Any]]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._pubsub: Any = None
        self._lock = asyncio.Lock()

    async def subscribe(self, topic: str) -> AsyncIterator[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=SUBSCRIBER_BUFFER)
        await self._attach(topic, queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.get(topic, set()).discard(queue)

    async def _attach(self, topic: str, queue: asyncio.Queue[dict[str, Any]]) -> None:
        async with self._lock:
            if self._pubsub is None:
                self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            if topic not in self._queues:
                self._queues[topic] = set()
                await self._pubsub.subscribe(CHANNEL_PREFIX + topic)
            self._queues[topic].add(queue)
            if self._reader is None:
                self._reader = asyncio.create_task(self._read(), name="broadcast-reader")

    async def _read(self) -> None:
        async for message in self._pubsub.listen():
            topic = message["channel"].decode()[len(CHANNEL_PREFIX) :]
            try:
                event = json.loads(message["data"])
            except ValueError:
                log.warning("dropping a malformed event on %s", topic)
                continue
            for queue in list(self._queues.get(topic, ())):
                if queue.full():
                    queue.get_nowait()
                queue.put_nowait(event)

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._pubsub is not None:
            await self._pubsub.aclose()
