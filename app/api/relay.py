"""Relay connections over keyset pagination: opaque cursors, `first` capped, pageInfo from one extra row."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeGuard, TypeVar

from strawberry import relay
from strawberry.dataloader import DataLoader

from app.api.errors import bad_argument, bad_cursor
from app.api.scalars import instant
from app.settings import Settings
from app.text.storable import unstorable

T = TypeVar("T", bound=relay.Node)
N = TypeVar("N", bound=relay.Node)
M = TypeVar("M")


def encode_cursor(kind: str, key: Sequence[Any]) -> str:
    raw = json.dumps([kind, *key], separators=(",", ":"), default=str)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str, arity: int) -> list[Any]:
    """The key a cursor of `kind` carries; a BAD_CURSOR error for anything else, and for a key the database could
    not take (a number past its 64-bit range, Infinity, text with a NUL): a forged cursor never reaches it."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError) as error:
        raise bad_cursor() from error
    if not isinstance(value, list) or len(value) != arity + 1 or value[0] != kind:
        raise bad_cursor()
    if not all(_storable(part) for part in value[1:]):
        raise bad_cursor()
    return value[1:]


def _storable(part: Any) -> bool:
    """A cursor's key part is flat: a string, a number in range, a boolean or null."""
    if isinstance(part, str):
        return unstorable(part) is None
    if isinstance(part, float):
        return math.isfinite(part)
    if isinstance(part, int):
        return -(2**63) <= part < 2**63
    return part is None


def whole(part: object, *, least: int = 1) -> TypeGuard[int]:
    """Whether a decoded cursor's key part is an integer of at least `least` (a row id: 1; an offset: 0), not a
    boolean (JSON's true would pass Python's isinstance as 1); decode_cursor has kept it within 64 bits."""
    return isinstance(part, int) and not isinstance(part, bool) and part >= least


def after_id_key(kind: str, after: str | None) -> int | None:
    """The key of an `after` cursor over rows in id order (None: from the start)."""
    if after is None:
        return None
    key = decode_cursor(kind, after, 1)[0]
    if not whole(key):
        raise bad_cursor()
    return key


def after_time_key(kind: str, after: str | None) -> tuple[datetime, int] | None:
    """The key of an `after` cursor over rows in (time, id) order, newest first (None: from the start)."""
    if after is None:
        return None
    moment, row = decode_cursor(kind, after, 2)
    at = instant(moment)
    if at is None or not whole(row):
        raise bad_cursor()
    return at, row


def database_id(node_id: Any) -> int:
    """The row id inside a global id; ids are positive bigints, so anything else (forged) matches nothing."""
    text = str(node_id)
    if not (text.isascii() and text.isdigit() and len(text) < 20):
        return -1
    value = int(text)
    return value if 0 < value < 2**63 else -1


async def resolve_global_id(info: Any, global_id: relay.GlobalID, cls: type[N]) -> N | None:
    """The object a global id names, when it is a `cls`; None for ids of other or unknown types."""
    try:
        node = await global_id.resolve_node(info)
    except (KeyError, ValueError, TypeError):
        return None  # a well-formed id naming a type we do not have
    return node if isinstance(node, cls) else None


async def load_nodes(
    loader: DataLoader[int, M | None], node_ids: Iterable[str], from_model: Callable[[M], N]
) -> list[N | None]:
    """`Node.resolve_nodes` for a type whose rows come from a by-id DataLoader."""
    rows = await loader.load_many([database_id(i) for i in node_ids])
    return [from_model(row) if row is not None else None for row in rows]


def id_of(global_id: relay.GlobalID, type_name: str, argument: str) -> int:
    """The row id of a global id that must name a `type_name`."""
    if global_id.type_name != type_name:
        raise bad_argument(f"`{argument}` must be the id of a {type_name}")
    return database_id(global_id.node_id)


def page_size(first: int | None, settings: Settings) -> int:
    """`first` as asked, or the default; BAD_USER_INPUT outside 0..page_size_max."""
    if first is None:
        return settings.page_size_default
    if first < 0 or first > settings.page_size_max:
        raise bad_argument(f"`first` must be between 0 and {settings.page_size_max}, got {first}")
    return first


def build_connection(
    rows: Sequence[M],
    *,
    size: int,
    had_cursor: bool,
    kind: str,
    key: Callable[[M], Sequence[Any]],
    node: Callable[[M], T],
) -> relay.Connection[T]:
    """`rows` holds up to size + 1 items: the extra one only says there is a next page."""
    page = rows[:size]
    edges = [relay.Edge(cursor=encode_cursor(kind, key(row)), node=node(row)) for row in page]
    return relay.Connection(
        edges=edges,
        page_info=relay.PageInfo(
            has_next_page=len(rows) > size,
            has_previous_page=had_cursor,
            start_cursor=edges[0].cursor if edges else None,
            end_cursor=edges[-1].cursor if edges else None,
        ),
    )
