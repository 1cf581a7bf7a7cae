"""How each subscription event is executed: with a memo of its own, so a long-lived subscription's memory stays flat.

graphql-core (3.3) executes every event on a shallow copy of the subscription's executor, and so shares with it the
memo of collected subfields, keyed by the identity of lists each event makes anew and keeping those lists alive. A
subscription then holds on to a few kilobytes for every item it ever delivered: an API process serving
`articleAdded` grew by about 2 kB per article per subscriber. Each event's executor gets an empty memo instead; it
still spares the work within the event (the items of a list share their subfields), and is freed with it."""

from __future__ import annotations

from typing import Any

from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext


class EventScopedExecutor(StrawberryGraphQLCoreExecutionContext):
    def build_per_event_executor(self, payload: Any) -> EventScopedExecutor:
        executor = super().build_per_event_executor(payload)
        executor._relevant_sub_fields = {}
        return executor  # type: ignore[return-value]
