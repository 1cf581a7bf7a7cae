"""Rows as JSON and back, for caches that hold what a page of results shows (never for writing)."""

from __future__ import annotations

import enum
import functools
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import DateTime, Enum, inspect

from app.db.base import Base

M = TypeVar("M", bound=Base)


@functools.cache  # a handful of (model, skip) pairs, asked for on every row of every cached page
def _columns(model: type[Base], skip: frozenset[str]) -> tuple[Any, ...]:
    mapper = inspect(model)
    deferred = {attribute.key for attribute in mapper.column_attrs if attribute.deferred}  # never loaded with a row
    return tuple(c for c in mapper.columns if c.key not in skip and not c.computed and c.key not in deferred)


def dump(row: Base, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in _columns(type(row), skip):
        value = getattr(row, column.key)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, enum.Enum):
            value = value.value
        out[column.key] = value
    return out


def load(model: type[M], data: dict[str, Any]) -> M:
    """A detached instance holding `data` (columns a dump skipped are left unset)."""
    values: dict[str, Any] = {}
    for column in _columns(model, frozenset()):
        if column.key not in data:
            continue
        value = data[column.key]
        if value is not None and isinstance(column.type, DateTime):
            value = datetime.fromisoformat(value)
        elif value is not None and isinstance(column.type, Enum) and column.type.enum_class is not None:
            value = column.type.enum_class(value)
        values[column.key] = value
    return model(**values)
