"""Each subscription event is executed with a memo of collected subfields of its own (app/api/event_executor.py):
graphql-core's per-event executor shares the subscription's, which then grows with every item ever delivered."""

from __future__ import annotations

from app.api.event_executor import EventScopedExecutor
from app.api.schema import build_schema
from app.settings import Settings
from graphql import parse
from tests.conftest import document


def test_each_event_collects_subfields_in_a_memo_of_its_own(settings: Settings) -> None:
    schema = build_schema(settings)
    subscription = EventScopedExecutor.build(schema._schema, parse(document("ArticleAdded")))
    assert isinstance(subscription, EventScopedExecutor), subscription
    events = [subscription.build_per_event_executor({"n": n}) for n in range(2)]
    memos = [subscription._relevant_sub_fields, *(event._relevant_sub_fields for event in events)]
    assert len({id(memo) for memo in memos}) == 3  # nothing an event memoizes outlives it
    assert schema.execution_context_class is EventScopedExecutor  # the API's schema runs events this way
