"""Meilisearch down under a running API: readers' searches are answered from PostgreSQL (the same results a search
on PostgreSQL alone gives), each counted and the outage logged once per `search_down_seconds`; the index's backlog
waits in the outbox and health says so. Meilisearch is a closed loopback port here: connections refused at once, as
from a server that is down. (Its catch-up when it returns needs a real Meilisearch: tests/test_search_sync.py, with
MEILI_URL.)"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from app.runtime.processes import free_port
from app.search.sync import sync
from app.services import Services
from app.settings import Settings
from tests.conftest import GraphQLClient, serve_api
from tests.newsroom import StorySpec, add_source, add_story, meili_settings

SEARCHES = 12
WORDS = ["strike", "ferry", "harbour", "walkout"]


def hits(data: dict[str, Any]) -> list[tuple[str, str]]:
    """What a reader sees of a result: each article and its highlighted title, in order (scores move with time)."""
    return [(edge["node"]["article"]["id"], edge["node"]["titleHighlight"]) for edge in data["search"]["edges"]]


async def test_searches_are_answered_from_postgresql_while_meilisearch_is_down(
    services: Services, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    outlets = [await add_source(services, settings, f"outlet{k}") for k in range(3)]
    await add_story(services, StorySpec("Port strike enters second week", outlets))
    await add_story(services, StorySpec("Ferry crews vote on a harbour walkout", outlets[:2]))
    async with serve_api(settings, services) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        on_postgres = [hits(await GraphQLClient(http).run("Search", query=word)) for word in WORDS]

    down = meili_settings(settings, f"http://127.0.0.1:{free_port()}")
    own = Services.open(down)
    try:
        with caplog.at_level(logging.WARNING, logger="app.search"):
            async with serve_api(down, own) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
                api = GraphQLClient(http)
                # when readers search while Meilisearch is down
                answers = [hits(await api.run("Search", query=WORDS[k % len(WORDS)])) for k in range(SEARCHES)]
                # and the worker's index sync meets it down too
                held = await sync(own.engine, own.search.meili, batch=100, retry_cap_seconds=30)
                health = (await api.run("Health"))["health"]
    finally:
        await own.close()
    # then every search has the answer PostgreSQL gives, the fallbacks are counted, and the outage is logged once
    assert answers == [on_postgres[k % len(WORDS)] for k in range(SEARCHES)]
    assert all(answers)
    search = health["search"]
    print(f"\nMeilisearch down: {SEARCHES} of {SEARCHES} searches answered from PostgreSQL, {search['fallbacks']} "
          f"fallbacks counted, {search['pendingEvents']} index events waiting")  # fmt: skip
    assert (search["backend"], search["reachable"], search["fallbacks"]) == ("meilisearch", False, SEARCHES)
    assert health["ok"] is True  # search down is not the API down
    assert held.failed
    assert search["pendingEvents"] >= 2
    assert caplog.text.count("Meilisearch failed, answering from PostgreSQL") == 1
