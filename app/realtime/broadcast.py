"""One Redis pub/sub connection per process, fanned out to any number of local subscribers; when Redis goes away
(or hangs: the reader PINGs a silent connection) the reader reconnects with back-off and catches its subscribers up
from the outbox (app/realtime/catchup.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

from redis.asyncio import Redis

from app.realtime.catchup import Delivered, MissedEvents
from app.resilience.backoff import Backoff
from app.resilience.metrics import BROADCAST_RECONNECTS, BROADCAST_SILENCES, CAUGHT_UP, REDIS_DEGRADED
from app.resilience.stopping import stop_if_told

log = logging.getLogger(__name__)

CHANNEL_PREFIX = "newsagg:events:"
SUBSCRIBER_BUFFER = 256


def channel_prefix(redis: Redis) -> str:
    """Where the channels of the Redis database `redis` uses begin. Pub/sub ignores database numbers: without the
    number, deployments sharing a Redis server on different databases would hear each other's events (and look up
    the ids they carry in their own database)."""
    return f"{CHANNEL_PREFIX}{redis.connection_pool.connection_kwargs.get('db', 0)}:"


def channel_of(redis: Redis, topic: str) -> str:
    return channel_prefix(redis) + topic


async def publish(redis: Redis, topic: str, payload: dict[str, Any]) -> None:
    await redis.publish(channel_of(redis, topic), json.dumps(payload))


class Broadcaster:
    """Subscribers get each event of their topic in order, once; a subscriber that falls behind loses the oldest.

    A subscriber may ask for the events about one story only: those are routed to it by a lookup, so an event costs
    the same whether a process holds ten or ten thousand subscribers following other stories.

    Losing Redis costs latency, not events: the reader reconnects (waits doubling up to `backoff_cap` seconds),
    resubscribes every topic, then delivers from the outbox (`missed`) what was published meanwhile, in order,
    before anything newer. Without `missed` (a process with no database) a reconnect only resubscribes. A Redis that
    hangs without closing the connection is lost too: after `liveness_seconds` without a word the reader PINGs, and
    a PING unanswered as long drops the connection (so does a (re)subscribe unanswered as long)."""

    def __init__(self, redis: Redis, *, missed: MissedEvents | None = None, catch_up_seconds: float = 10,
                 backoff_cap: float = 5, liveness_seconds: float = 5) -> None:  # fmt: skip
        self._redis = redis
        self._prefix = channel_prefix(redis)
        # topic -> story id (None: every event of the topic) -> subscribers' queues
        self._queues: dict[str, dict[int | None, set[asyncio.Queue[dict[str, Any]]]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._pubsub: Any = None
        self._lock = asyncio.Lock()
        self._missed = missed
        self._slack = timedelta(seconds=catch_up_seconds)
        self._backoff = Backoff(cap=backoff_cap)
        self._delivered = Delivered()
        self._liveness = liveness_seconds
        self.connected = False
        self.reconnects = 0  # after each, subscribers reading a table of their own (not the outbox) read it again

    async def subscribe(self, topic: str, *, story_id: int | None = None) -> AsyncIterator[dict[str, Any]]:
        """The events of `topic` (with `story_id`: only those whose "story_id" is that)."""
        async with self.listen(topic, story_id=story_id) as queue:
            while True:
                yield await queue.get()

    @contextlib.asynccontextmanager
    async def listen(self, topic: str, *, story_id: int | None = None) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
        """Like `subscribe`, but attached as soon as entered: a caller that then reads the state it follows from the
        database misses no event published meanwhile (while Redis is reachable; otherwise the catch-up brings it)."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=SUBSCRIBER_BUFFER)
        await self._attach(topic, story_id, queue)
        try:
            yield queue
        finally:
            self._detach(topic, story_id, queue)

    async def _attach(self, topic: str, story_id: int | None, queue: asyncio.Queue[dict[str, Any]]) -> None:
        async with self._lock:
            if topic not in self._queues:
                self._queues[topic] = {}
                if self._reader is None:
                    await self._connect()
                elif self.connected:
                    await self._subscribe_to(topic)
            self._queues[topic].setdefault(story_id, set()).add(queue)
            if self._reader is None:
                self._reader = asyncio.create_task(self._read(), name="broadcast-reader")

    async def _subscribe_to(self, topic: str) -> None:
        """A failure here is the reader's to notice: its connection is the same, and it resubscribes everything."""
        try:
            await self._pubsub.subscribe(self._prefix + topic)
        except Exception as error:
            log.warning("broadcast: subscribing to %s failed, left to the reconnect: %s", topic, error)

    async def _connect(self) -> None:
        """A fresh pub/sub connection subscribed to every topic; on failure the reader retries."""
        if self._pubsub is not None:
            with contextlib.suppress(Exception):  # a hung Redis may not even let it close
                await asyncio.wait_for(self._pubsub.aclose(), self._liveness)
        # subscribe confirmations are read (and skipped) by the reader: each word from Redis proves it alive
        self._pubsub = self._redis.pubsub()
        try:
            subscribing = self._pubsub.subscribe(*(self._prefix + topic for topic in self._queues))
            await asyncio.wait_for(subscribing, self._liveness)
            self.connected = True
        except Exception as error:
            self.connected = False
            log.warning("broadcast: Redis unreachable, subscribers wait for the reconnect: %s", error)

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
        """Forever: read pub/sub; on losing Redis, back off, reconnect, catch up, read again."""
        lost_at = None if self.connected else datetime.now(UTC)
        while True:
            try:
                if lost_at is not None:
                    await self._reconnect(lost_at)
                    lost_at = None
                await self._listen()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                stop_if_told(error)
                lost_at = lost_at or datetime.now(UTC)
                self.connected = False
                REDIS_DEGRADED.labels("broadcast").inc()
                wait = self._backoff.next_wait()
                log.warning("broadcast: lost Redis (%s); reconnecting in %.1f s", error, wait)
                await asyncio.sleep(wait)

    async def _listen(self) -> None:
        """Delivers messages until the connection fails or Redis stays silent through a PING."""
        pinged = False
        while True:
            stop_if_told()  # a stop a bounded call dropped (app/resilience/stopping.py) would leave it listening
            message = await self._pubsub.get_message(timeout=self._liveness)
            if message is not None:
                pinged = False
                if message["type"] == "message":
                    self._deliver(message["channel"].decode()[len(self._prefix) :], message["data"])
            elif pinged:
                BROADCAST_SILENCES.inc()
                raise TimeoutError(f"Redis left a PING unanswered for {self._liveness:g} s")
            else:
                await asyncio.wait_for(self._pubsub.ping(), self._liveness)
                pinged = True

    async def _reconnect(self, lost_at: datetime) -> None:
        async with self._lock:
            await self._connect()
            if not self.connected:
                raise ConnectionError("Redis is still unreachable")
            caught_up = await self._catch_up(lost_at - self._slack)
        self._backoff.reset()
        self.reconnects += 1
        BROADCAST_RECONNECTS.inc()
        log.info("broadcast: reconnected to Redis after %.1f s; %d missed event(s) delivered from the outbox",
                 (datetime.now(UTC) - lost_at).total_seconds(), caught_up)  # fmt: skip

    async def _catch_up(self, since: datetime) -> int:
        """Delivers, topic by topic in outbox order, the events missed since `since` that were not delivered yet."""
        if self._missed is None:
            return 0
        caught_up = 0
        for topic in list(self._queues):
            for event in await self._missed(topic, self._delivered.newest(topic), since):
                if self._delivered.missed(topic, event):
                    self._route(topic, event)
                    CAUGHT_UP.labels(topic).inc()
                    caught_up += 1
        return caught_up

    def _deliver(self, topic: str, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            log.warning("dropping a malformed event on %s", topic)
            return
        if self._delivered.live(topic, event):
            self._route(topic, event)

    def _route(self, topic: str, event: Any) -> None:
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
