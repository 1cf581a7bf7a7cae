"""The parse and validation caches really hit, with the depth/alias/token limits in place."""

from __future__ import annotations

from strawberry.extensions.parser_cache import _get_parse_cache
from strawberry.extensions.validation_cache import _get_validate_cache

from app.api.schema import build_schema
from app.settings import Settings


async def test_a_repeated_document_is_parsed_and_validated_once() -> None:
    settings = Settings(_env_file=None, graphql_cache_size=7)  # type: ignore[call-arg]
    schema = build_schema(settings)
    document = "query Repeated { __typename }"
    parse_cache, validate_cache = _get_parse_cache(7), _get_validate_cache(7)
    parse_cache.cache_clear()
    validate_cache.cache_clear()
    for _ in range(5):
        result = await schema.execute(document)
        assert result.errors is None
    assert parse_cache.cache_info().misses == 1
    assert validate_cache.cache_info().misses == 1
    assert validate_cache.cache_info().hits == 4


async def test_limits_still_apply_with_caches() -> None:
    schema = build_schema(Settings(_env_file=None, query_max_aliases=3))  # type: ignore[call-arg]
    result = await schema.execute("{ a: __typename b: __typename c: __typename d: __typename }")
    assert result.errors
    assert "aliases" in result.errors[0].message
