"""/metrics: GraphQL operations by name and outcome with their latency, bounded labels whatever clients send, the
worker's fetches, articles, jobs, clustering lag and backlogs, and several processes' numbers added up by any API."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text

from app.observability.backlogs import sample_backlogs
from app.observability.requests import OTHER_NAMES, document_names
from app.observability.work import measured
from app.runtime.processes import free_port
from app.search.recent import recent_indexes
from app.search.sync import SEARCH_TOPIC
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from tests.conftest import GraphQLClient
from tests.feeds import FeedServer, Reply, items, rss
from tests.processes import Samples, deployment_env, running, scrape, total, value

OPERATIONS = "newsagg_graphql_operations_total"
LATENCY = "newsagg_graphql_operation_duration_seconds"
SEARCH_SERIES = frozenset({("topic", SEARCH_TOPIC)})


async def test_a_graphql_request_moves_its_operation_s_count_and_latency(gql: GraphQLClient, api_url: str) -> None:
    async with httpx.AsyncClient(base_url=api_url) as http:
        before = await scrape(http)
        await gql.run("Health")
        refused = await gql.post("{ noSuchField }")
        after = await scrape(http)

    assert refused["errors"]

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved(OPERATIONS, operation="Health", type="query", outcome="ok") == 1
    assert moved(OPERATIONS, operation="anonymous", type="query", outcome="GRAPHQL_VALIDATION_FAILED") == 1
    assert moved("newsagg_graphql_errors_total", code="GRAPHQL_VALIDATION_FAILED") == 1
    assert moved(f"{LATENCY}_count", operation="Health", type="query") == 1
    assert moved(f"{LATENCY}_bucket", operation="Health", type="query", le="+Inf") == 1
    assert value(after, f"{LATENCY}_sum", operation="Health", type="query") > 0
    http_graphql = total(after, "newsagg_http_requests_total", route="/graphql", method="POST")
    assert http_graphql - total(before, "newsagg_http_requests_total", route="/graphql", method="POST") == 2
    assert value(after, "newsagg_http_request_duration_seconds_count", route="/graphql", method="POST") >= 2


async def test_operation_names_clients_make_up_cannot_grow_the_metrics_without_bound(
    gql: GraphQLClient, api_url: str
) -> None:
    made_up = [f"MadeUp{n}" for n in range(3 * OTHER_NAMES)]
    for name in made_up:
        assert (await gql.post(f"query {name} {{ __typename }}"))["data"] == {"__typename": "Query"}
    async with httpx.AsyncClient(base_url=api_url) as http:
        samples = await scrape(http)

    names = {dict(series)["operation"] for (metric, series) in samples if metric == OPERATIONS}
    assert len(names - document_names()) <= OTHER_NAMES + 2  # the admitted others, "other" and "anonymous"
    assert value(samples, OPERATIONS, operation="other", type="query", outcome="ok") >= 2 * OTHER_NAMES
    assert "Health" in document_names()
    assert "ArticleAdded" in document_names()


async def add_feed(services: Services, settings: Settings, feed_server: FeedServer, articles: int) -> int:
    feed_server.routes["/wire.xml"] = Reply(200, rss(items(articles)), {"Content-Type": "application/rss+xml"})
    async with services.db.begin() as session:
        request = SourceRequest(feed_url=feed_server.url("/wire.xml"), name="Wire")
        return (await create_source(session, settings, request)).id


def registry_value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_crawl_counts_its_fetch_articles_jobs_and_clustering_lag(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: object
) -> None:
    await add_feed(services, settings, feed_server, articles=3)
    watched = [("newsagg_fetches_total", {"outcome": "fetched"}), ("newsagg_articles_ingested_total", {"via": "poll"}),
               ("newsagg_job_duration_seconds_count", {"job": "refresh_source_job"}),
               ("newsagg_clustering_lag_seconds_count", {})]  # fmt: skip
    before = [registry_value(name, **labels) for name, labels in watched]

    await crawl()  # type: ignore[operator]

    moved = [registry_value(name, **labels) - was for (name, labels), was in zip(watched, before, strict=True)]
    assert moved == [1, 3, 1, 3]


async def test_the_backlogs_read_what_waits_in_the_database(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: object
) -> None:
    await add_feed(services, settings, feed_server, articles=4)
    await crawl()  # type: ignore[operator]  # no cron jobs: the search index events stay pending
    async with services.engine.begin() as connection:
        await connection.execute(
            text("UPDATE articles SET cluster_id = NULL WHERE id = (SELECT min(id) FROM articles)")
        )
        await connection.execute(text("UPDATE outbox SET created_at = now() - interval '90 seconds'"))
        pending = await connection.scalar(text(f"SELECT count(*) FROM outbox WHERE topic = '{SEARCH_TOPIC}' "
                                               "AND delivered_at IS NULL"))  # fmt: skip

    await sample_backlogs(services.engine, ("story.breaking", SEARCH_TOPIC), SEARCH_TOPIC)

    assert pending
    assert registry_value("newsagg_outbox_pending_events", topic=SEARCH_TOPIC) == pending
    assert registry_value("newsagg_outbox_pending_events", topic="story.breaking") == 0
    assert registry_value("newsagg_search_sync_lag_seconds") >= 90
    assert registry_value("newsagg_outbox_oldest_pending_seconds", topic=SEARCH_TOPIC) >= 90
    assert registry_value("newsagg_articles_unclustered") == 1


async def test_a_job_that_raises_is_counted_as_failed_and_still_raises() -> None:
    async def broken_job(ctx: dict[str, object]) -> None:
        raise RuntimeError("the feed server exploded")

    before = registry_value("newsagg_job_failures_total", job="broken_job")
    with pytest.raises(RuntimeError):
        await measured(broken_job)({})
    assert registry_value("newsagg_job_failures_total", job="broken_job") == before + 1
    assert registry_value("newsagg_job_duration_seconds_count", job="broken_job") == 1


async def drop_recent_indexes(services: Services) -> None:
    """The worker built the day's search index: indexes outlive the tables' truncation between tests."""
    async with services.engine.begin() as connection:
        for name in await recent_indexes(connection):
            await connection.execute(text(f"DROP INDEX {name}"))


async def until(url: str, predicate: Callable[[Samples], bool], seconds: float = 60) -> Samples:
    """/metrics, read until `predicate(samples)` holds (another process does the work: there is nothing to await)."""
    async with httpx.AsyncClient(base_url=url) as http, asyncio.timeout(seconds):
        while True:
            with contextlib.suppress(httpx.ConnectError):  # not listening yet
                samples = await scrape(http)
                if predicate(samples):
                    return samples
            await asyncio.sleep(0.2)


async def test_the_api_reports_what_a_worker_process_counted(
    services: Services, settings: Settings, feed_server: FeedServer, tmp_path: Path
) -> None:
    """Given an API and a worker started by hand on one home, a crawl counted by the worker is in the API's /metrics;
    a stale file from a past deployment is cleared by the first process, and the worker joining clears nothing."""
    env = deployment_env(settings, tmp_path / "home")
    folder = tmp_path / "home" / "metrics"
    folder.mkdir(parents=True)
    (folder / "counter_4194000.db").write_bytes(b"left by a deployment that has stopped")
    await add_feed(services, settings, feed_server, articles=5)
    try:
        with running(env, "api", log=tmp_path / "api.log") as api:
            assert not (folder / "counter_4194000.db").exists()
            async with httpx.AsyncClient(base_url=api.url) as http:
                await http.get("/healthz")
            with running(env, "worker", log=tmp_path / "worker.log"):
                samples = await until(api.url, lambda s: value(s, "newsagg_articles_ingested_total", via="poll") >= 5
                                      and ("newsagg_outbox_pending_events", SEARCH_SERIES) in s)  # fmt: skip
            assert value(samples, "newsagg_fetches_total", outcome="fetched") == 1
            assert value(samples, "newsagg_job_duration_seconds_count", job="refresh_source_job") >= 1
            assert value(samples, "newsagg_http_requests_total", route="/healthz", method="GET", status="200") >= 2
    finally:
        await drop_recent_indexes(services)


def sampled(samples: Samples) -> bool:
    """The backlog gauges are set while the sampling job runs, its duration once it has ended: both are there."""
    return ("newsagg_outbox_pending_events", SEARCH_SERIES) in samples and value(
        samples, "newsagg_job_duration_seconds_count", job="sample_backlogs_job"
    ) >= 1


async def test_a_worker_without_an_api_beside_it_serves_its_own_metrics(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    port = free_port()
    env = deployment_env(settings, tmp_path / "home", NEWSAGG_WORKER_METRICS_ADDRESS=f"127.0.0.1:{port}")
    try:
        with running(env, "worker", log=tmp_path / "worker.log"):
            samples = await until(f"http://127.0.0.1:{port}", sampled)
    finally:
        await drop_recent_indexes(services)
    assert value(samples, "newsagg_job_duration_seconds_count", job="sample_backlogs_job") >= 1


async def test_a_request_the_http_view_refuses_is_counted_by_the_code_it_answers(api_url: str) -> None:
    """Given a document without the operation it names (one of graphql/'s names: a label every process keeps) and a
    mutation sent over GET, when they are refused, then the operations metric counts them by the code the client
    got, never as an internal error of ours."""
    internal = registry_value("newsagg_graphql_errors_total", code="INTERNAL_SERVER_ERROR")
    unresolved = registry_value(OPERATIONS, operation="Health", type="unknown", outcome="OPERATION_RESOLUTION_FAILURE")
    over_get = registry_value(OPERATIONS, operation="anonymous", type="mutation", outcome="METHOD_NOT_ALLOWED")
    async with httpx.AsyncClient(base_url=api_url) as http:
        named = await http.post("/graphql", json={"query": "query A { __typename }", "operationName": "Health"})
        mutation = await http.get("/graphql", params={"query": "mutation { logOut { revoked } }"})
    assert named.json()["errors"][0]["extensions"]["code"] == "OPERATION_RESOLUTION_FAILURE"
    assert mutation.status_code == 405
    assert registry_value(OPERATIONS, operation="Health", type="unknown",
                          outcome="OPERATION_RESOLUTION_FAILURE") == unresolved + 1  # fmt: skip
    assert registry_value(OPERATIONS, operation="anonymous", type="mutation",
                          outcome="METHOD_NOT_ALLOWED") == over_get + 1  # fmt: skip
    assert registry_value("newsagg_graphql_errors_total", code="INTERNAL_SERVER_ERROR") == internal


async def test_an_error_is_counted_by_the_code_the_client_got(api_url: str) -> None:
    """Given an id that decodes to nothing, when a resolver refuses it (a client's error, answered BAD_USER_INPUT),
    then the metrics count that code, not an internal error."""
    internal = registry_value("newsagg_graphql_errors_total", code="INTERNAL_SERVER_ERROR")
    bad_input = registry_value(OPERATIONS, operation="anonymous", type="query", outcome="BAD_USER_INPUT")
    async with httpx.AsyncClient(base_url=api_url) as http:
        answer = await http.post("/graphql", json={"query": '{ node(id: "garbage") { id } }'})
    assert answer.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert registry_value(OPERATIONS, operation="anonymous", type="query", outcome="BAD_USER_INPUT") == bad_input + 1
    assert registry_value("newsagg_graphql_errors_total", code="INTERNAL_SERVER_ERROR") == internal
