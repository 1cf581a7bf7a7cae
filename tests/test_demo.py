"""Demo/replay mode's feed server: one feed per folder, snapshots served in order, conditional GET."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.runtime.demo import DemoFeedServer, discover_feeds
from tests.feeds import items, rss


@pytest.fixture
def replay_dir(tmp_path: Path) -> Path:
    (tmp_path / "rss" / "wire").mkdir(parents=True)
    (tmp_path / "rss" / "wire" / "20200101T000000Z.xml").write_bytes(rss(items(1)))
    (tmp_path / "rss" / "wire" / "20200102T000000Z.xml").write_bytes(rss(items(2)))
    (tmp_path / "single.xml").write_bytes(rss(items(1, prefix="Solo")))
    (tmp_path / "notes.txt").write_text("not a feed")
    return tmp_path


def test_discovery(replay_dir: Path) -> None:
    feeds = {feed.path: [p.name for p in feed.snapshots] for feed in discover_feeds(replay_dir)}
    assert feeds == {"/rss/wire": ["20200101T000000Z.xml", "20200102T000000Z.xml"], "/single.xml": ["single.xml"]}


def test_snapshots_replay_in_order_then_stay_on_the_last(replay_dir: Path) -> None:
    server = DemoFeedServer(replay_dir).start()
    try:
        url = server.url(server.feeds["/rss/wire"])
        bodies = [httpx.get(url).content for _ in range(3)]
        assert bodies[0].count(b"<item>") == 1
        assert bodies[1].count(b"<item>") == 2
        assert bodies[2] == bodies[1]
        etag = httpx.get(url).headers["etag"]
        assert httpx.get(url, headers={"If-None-Match": etag}).status_code == 304
        assert httpx.get(f"http://127.0.0.1:{server.port}/nope").status_code == 404
    finally:
        server.stop()


def test_a_folder_without_feeds_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no feed files"):
        DemoFeedServer(tmp_path)


def test_the_shared_sample_is_discovered(sample_feeds: Path) -> None:
    feeds = discover_feeds(sample_feeds)
    assert len(feeds) >= 20
    assert all(len(feed.snapshots) >= 1 for feed in feeds)


def test_one_home_serves_one_instance(tmp_path: Path) -> None:
    from app.runtime.supervisor import HomeInUse, home_lock

    with home_lock(tmp_path / "home"):
        with pytest.raises(HomeInUse), home_lock(tmp_path / "home"):
            pass
        with home_lock(tmp_path / "other"):
            pass
    with home_lock(tmp_path / "home"):  # released with the first instance
        pass
