"""One logging setup for every newsagg process (supervisor, API, worker): standard-library records (ours, uvicorn's
server and access logs, arq's, SQLAlchemy's) and structlog's rendered alike, as aligned text for people or one JSON
object a line for collectors, each with the id of the request it belongs to."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor

TEXT, JSON = "text", "json"
LEADING = ("timestamp", "level", "logger", "request_id", "event")
QUIET = {"alembic.runtime.plugins": logging.WARNING}  # seven setup lines per migration, all alike


def resolve_format(configured: str | None, stream: TextIO | None = None) -> str:
    """The format asked for; unset: text for a person at a terminal, JSON for whatever collects the output."""
    return configured or (TEXT if (stream or sys.stderr).isatty() else JSON)


def _access_fields(logger: Any, method: str, event: EventDict) -> EventDict:
    """uvicorn's access line as fields too: client, method, path, status (the message stays for text readers)."""
    record, args = event.get("_record"), event.pop("positional_args", None)
    if record is not None and record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
        client, verb, path, _, status = args
        event.update(client=client, method=verb, path=path, status=status)
    return event


def _shared() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,  # request_id
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _access_fields,
    ]


def _first_things_first(logger: Any, method: str, event: EventDict) -> EventDict:
    """JSON lines read left to right: when, how bad, where from, which request, what; then the rest."""
    leading = {key: event[key] for key in LEADING if key in event}
    return {**leading, **event}


def formatter(format: str) -> logging.Formatter:
    """Renders any record, the standard library's or structlog's, as `format` (text or json)."""
    last: list[Processor] = (
        [structlog.processors.format_exc_info, _first_things_first,
         structlog.processors.JSONRenderer(ensure_ascii=False)]
        if format == JSON
        else [structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())]
    )  # fmt: skip
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared(),
        pass_foreign_args=True,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *last],
    )


def configure(level: str, format: str) -> None:
    """Route every record through one handler on standard error, rendered as `format` (text or json)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(format))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper())
    for name, quieter in QUIET.items():
        logging.getLogger(name).setLevel(quieter)
    structlog.configure(
        processors=[*_shared(), structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
