"""What every resolver gets as `info.context`: the process's services and this request's (or operation's) loaders."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from strawberry.types import Info as StrawberryInfo

from app.api.loaders import Loaders
from app.api.queue import JobQueue
from app.services import Services


@dataclass
class Context:
    services: Services
    loaders: Loaders
    queue: JobQueue
    request: Any = None
    response: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    connection_params: Any = None  # a WebSocket's connection_init payload (strawberry sets it)

    @classmethod
    def create(cls, services: Services, queue: JobQueue, request: Any = None, response: Any = None) -> Context:
        return cls(services, Loaders.for_request(services.db), queue, request=request, response=response)

    def for_operation(self) -> Context:
        """One operation's context on a WebSocket, whose own context lives as long as the connection: the
        connection's services, credential and notes (its lease), with loaders and notes of the operation's own. So
        what a query resolves is never what an earlier operation cached, and operations running at once on one
        socket do not swap each other's loaders."""
        return replace(self, loaders=Loaders.for_request(self.services.db), extra=dict(self.extra))


Info = StrawberryInfo[Context, None]
