"""A benchmark's workers write to Redis under names of their own choosing (arq's job keys, politeness, trending): a
run takes a redis-server of its own, so that nothing it wrote is left in a Redis others use."""

from __future__ import annotations

import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from bench.ingest import scratch_redis


def test_what_a_run_writes_to_its_redis_goes_with_the_run() -> None:
    with scratch_redis() as url:
        redis = Redis.from_url(url)
        redis.mset({f"arq:job:article-text:{n}": b"x" for n in range(2000)})
        assert redis.dbsize() == 2000
        redis.close()

    with pytest.raises(RedisConnectionError):  # the server went with the run, and everything it held
        Redis.from_url(url, socket_connect_timeout=2).ping()


def test_the_article_text_bench_runs_on_a_redis_of_its_own() -> None:
    import bench.article_text as article_text

    assert article_text.scratch_redis is scratch_redis
