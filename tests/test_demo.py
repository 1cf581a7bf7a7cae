"""Demo/replay mode's feed server: one feed per folder, snapshots served on a compressed clock with their dates moved
to the present, conditional GET."""

from __future__ import annotations

import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import feedparser
import httpx
import pytest

from app.runtime.demo import DemoFeedServer, discover_feeds
from app.runtime.replay import Replay
from app.runtime.snapshot_archive import unpacked
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


class Clock:
    """The replay's real clock, moved by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_snapshots_replay_on_the_compressed_clock_with_dates_moved_to_the_present(replay_dir: Path) -> None:
    began = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
    clock = Clock(began)
    server = DemoFeedServer(replay_dir, speed=3600, clock=clock).start()  # an hour of the snapshots a second
    try:
        url = server.url(server.feeds["/rss/wire"])
        first = httpx.get(url)
        assert first.content.count(b"<item>") == 1
        clock.now = began + timedelta(seconds=23.9)  # 23.9 hours of the snapshots later: still the first
        assert httpx.get(url).content == first.content
        clock.now = began + timedelta(seconds=24)
        second = feedparser.parse(httpx.get(url).content)
        assert len(second.entries) == 2
        # the last snapshot lands when the replay began; the gaps between dates are kept
        published = sorted(datetime(*e.published_parsed[:6], tzinfo=UTC) for e in second.entries)
        original = sorted(datetime(*e.published_parsed[:6], tzinfo=UTC)
                          for e in feedparser.parse(rss(items(2))).entries)  # fmt: skip
        offset = began - datetime(2020, 1, 2, tzinfo=UTC)
        assert published == [when + offset for when in original]
        clock.now = began + timedelta(days=9)  # past the stretch's end: the feed stays on its last snapshot
        assert feedparser.parse(httpx.get(url).content).entries == second.entries
        etag = httpx.get(url).headers["etag"]
        assert httpx.get(url, headers={"If-None-Match": etag}).status_code == 304
        assert httpx.get(f"http://127.0.0.1:{server.port}/nope").status_code == 404
    finally:
        server.stop()


def test_the_replay_begins_with_the_first_feed_request_not_when_the_server_is_made(replay_dir: Path) -> None:
    made = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
    clock = Clock(made)
    server = DemoFeedServer(replay_dir, speed=3600, clock=clock).start()
    try:
        clock.now = made + timedelta(minutes=5)  # the worker took a while to start: 5 replayed hours nobody saw
        url = server.url(server.feeds["/rss/wire"])
        assert httpx.get(f"http://127.0.0.1:{server.port}/robots.txt").status_code == 404  # not a feed: no start
        first = feedparser.parse(httpx.get(url).content)
        assert len(first.entries) == 1  # the stretch's first snapshot, not the one 5 hours in
        [published] = [datetime(*e.published_parsed[:6], tzinfo=UTC) for e in first.entries]
        [original] = [datetime(*e.published_parsed[:6], tzinfo=UTC) for e in feedparser.parse(rss(items(1))).entries]
        assert published == original + (clock.now - datetime(2020, 1, 2, tzinfo=UTC))  # the end lands at this request
        clock.now += timedelta(seconds=24)
        assert len(feedparser.parse(httpx.get(url).content).entries) == 2
    finally:
        server.stop()


def test_the_demo_measures_velocity_over_hours_of_replayed_news() -> None:
    from app.runtime.supervisor import _demo_environment

    assert _demo_environment({}, 600)["NEWSAGG_VELOCITY_WINDOW_SECONDS"] == "72"  # 12 hours of news at 600x
    assert _demo_environment({}, 60)["NEWSAGG_VELOCITY_WINDOW_SECONDS"] == "720"
    assert _demo_environment({}, 60_000)["NEWSAGG_VELOCITY_WINDOW_SECONDS"] == "20"  # several fetches of each feed
    chosen = _demo_environment({"NEWSAGG_VELOCITY_WINDOW_SECONDS": "1800", "NEWSAGG_CRAWL_TICK_SECONDS": "5"}, 600)
    assert (chosen["NEWSAGG_VELOCITY_WINDOW_SECONDS"], chosen["NEWSAGG_CRAWL_TICK_SECONDS"]) == ("1800", "5")
    assert chosen["NEWSAGG_ALLOW_LOOPBACK_SOURCES"] == "true"


def test_a_feed_not_yet_begun_answers_503(tmp_path: Path) -> None:
    for name, day in (("early", "20200101"), ("late", "20200103")):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{day}T000000Z.xml").write_bytes(rss(items(1)))
    server = DemoFeedServer(tmp_path, speed=1, hours=72).start()
    try:
        assert httpx.get(server.url(server.feeds["/early"])).status_code == 200
        late = httpx.get(server.url(server.feeds["/late"]))
        assert late.status_code == 503
        assert late.headers["retry-after"]
    finally:
        server.stop()


def test_the_replay_is_the_busiest_stretch() -> None:
    hour = timedelta(hours=1)
    quiet = [datetime(2021, 1, 1, tzinfo=UTC) + day * timedelta(days=1) for day in range(5)]
    busy = [datetime(2021, 2, 1, tzinfo=UTC) + n * hour for n in range(10)]
    replay = Replay.busiest([*quiet, *busy, quiet[0]], hours=24, speed=60, began=busy[0])
    assert (replay.start, replay.end) == (busy[0], busy[-1])
    assert replay.position(busy[0] + timedelta(minutes=1)) == busy[1]
    assert replay.position(busy[0] + timedelta(days=1)) == busy[-1]


def test_every_kind_of_date_moves_and_others_are_left_alone() -> None:
    replay = Replay(datetime(2021, 1, 1, tzinfo=UTC), datetime(2021, 1, 2, tzinfo=UTC), 1,
                    datetime(2021, 1, 3, tzinfo=UTC))  # fmt: skip
    body = (b"<pubDate>Sat, 02 Jan 2021 10:00:00 +1000</pubDate><published>2021-01-01T00:00:00+00:00</published>"
            b"<updated>2021-01-01T00:00:00Z</updated><dc:date>2021-01-01T06:00:00-05:00</dc:date>"
            b"<pubDate>not a date at all</pubDate><title>2021-01-01T00:00:00Z</title>")  # fmt: skip
    assert replay.shift(body) == (
        b"<pubDate>Sun, 03 Jan 2021 10:00:00 +1000</pubDate><published>2021-01-02T00:00:00+00:00</published>"
        b"<updated>2021-01-02T00:00:00+00:00</updated><dc:date>2021-01-02T06:00:00-05:00</dc:date>"
        b"<pubDate>not a date at all</pubDate><title>2021-01-01T00:00:00Z</title>"
    )


def test_an_archive_is_unpacked_once_into_the_home(replay_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    packed = tmp_path_factory.mktemp("packed") / "feeds.tar.xz"
    with tarfile.open(packed, "w:xz") as archive:
        archive.add(replay_dir / "rss", "rss")
    home = tmp_path_factory.mktemp("home")
    folder = unpacked(packed, home)
    assert [feed.path for feed in discover_feeds(folder)] == ["/rss/wire"]
    (folder / "rss" / "wire" / "20200101T000000Z.xml").unlink()
    assert unpacked(packed, home) == folder
    assert len(discover_feeds(folder)[0].snapshots) == 1  # not unpacked again
    assert unpacked(replay_dir, home) == replay_dir


@pytest.mark.parametrize("compression", ["xz", "gz", ""])
def test_only_the_busiest_stretch_is_unpacked(replay_dir: Path, tmp_path_factory: pytest.TempPathFactory,
                                              compression: str) -> None:  # fmt: skip
    (replay_dir / "rss" / "old").mkdir()
    (replay_dir / "rss" / "old" / "20191201T000000Z.xml").write_bytes(rss(items(1)))  # a month before the rest
    (replay_dir / "rss" / "wire" / "20200101T120000Z.xml").write_bytes(rss(items(2)))
    packed = tmp_path_factory.mktemp("packed") / "feeds.tar"
    with tarfile.open(packed, f"w:{compression}") as archive:
        archive.add(replay_dir / "rss", "rss")
    folder = unpacked(packed, tmp_path_factory.mktemp("home"), hours=24)
    feeds = {feed.path: [p.name for p in feed.snapshots] for feed in discover_feeds(folder)}
    assert feeds == {"/rss/wire": ["20200101T000000Z.xml", "20200101T120000Z.xml", "20200102T000000Z.xml"]}
    assert not list(folder.parent.glob("*.tar"))  # the plain copy read on the way is gone


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
