"""What every resolver gets as `info.context`: the process's services and this request's loaders."""

from __future__ import annotations

from dataclasses import dataclass, field
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


Info = StrawberryInfo[Context, None]
