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
    """Subscribers get each event of their topic in order; a subscriber that falls behind loses the oldest.

    A subscriber may ask for the events about one story only: those are routed to it by a lookup, so an event costs
    the same whether a process holds ten or ten thousand subscribers following other stories."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        # topic -> story id (None: every event of the topic) -> subscribers' queues
        self._queues: dict[str, dict[int | None, set[asyncio.Queue[dict[str, Any]]]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._pubsub: Any = None
        self._lock = asyncio.Lock()

    async def subscribe(self, topic: str, *, story_id: int | None = None) -> AsyncIterator[dict[str, Any]]:
        """The events of `topic` (with `story_id`: only those whose "story_id" is that)."""
        async with self.listen(topic, story_id=story_id) as queue:
            while True:
                yield await queue.get()

    @contextlib.asynccontextmanager
    async def listen(self, topic: str, *, story_id: int | None = None) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
        """Like `subscribe`, but attached as soon as entered: a caller that then reads the state it follows from the
        database misses no event published meanwhile."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=SUBSCRIBER_BUFFER)
        await self._attach(topic, story_id, queue)
        try:
            yield queue
        finally:
            self._detach(topic, story_id, queue)

    async def _attach(self, topic: str, story_id: int | None, queue: asyncio.Queue[dict[str, Any]]) -> None:
        async with self._lock:
            if self._pubsub is None:
                self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            if topic not in self._queues:
                self._queues[topic] = {}
                await self._pubsub.subscribe(CHANNEL_PREFIX + topic)
            self._queues[topic].setdefault(story_id, set()).add(queue)
            if self._reader is None:
                self._reader = asyncio.create_task(self._read(), name="broadcast-reader")

    def listeners(self, topic: str, *, story_id: int | None = None) -> int:
        """How many local subscribers are attached to `topic` (or to one story of it)."""
        return len(self._queues.get(topic, {}).get(story_id, ()))

    def _detach(self, topic: str, story_id: int | None, queue: asyncio.Queue[dict[str, Any]]) -> None:
        routes = self._queues.get(topic, {})
        queues = routes.get(story_id, set())
        queues.discard(queue)
        if not queues and story_id is not None:
            routes.pop(story_id, None)

    async def _read(self) -> None:
        async for message in self._pubsub.listen():
            topic = message["channel"].decode()[len(CHANNEL_PREFIX) :]
            try:
                event = json.loads(message["data"])
            except ValueError:
                log.warning("dropping a malformed event on %s", topic)
                continue
            routes = self._queues.get(topic, {})
            story = event.get("story_id") if isinstance(event, dict) else None
            for queue in [*routes.get(None, ()), *(routes.get(story, ()) if isinstance(story, int) else ())]:
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
