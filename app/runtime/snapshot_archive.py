"""The demo's snapshot archive (.tar, .tar.xz, ...) unpacked once into the home: only the snapshots the replay serves.

An archive may hold months of snapshots while the demo replays its busiest stretch, and on a busy disk creating
thousands of small files costs more than decompressing: the archive is decompressed once into a plain tar beside the
target (a tar can be listed and read again only by decompressing it again), the stretch is chosen from the members'
names, only its snapshots are written out, and the plain tar is removed.
"""

from __future__ import annotations

import tarfile
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from app.runtime.replay import Replay, stamped

FEED_SUFFIXES = frozenset({".xml", ".rss", ".atom", ".rdf", ".json"})


def unpacked(path: Path, home: Path, hours: float = 24.0) -> Path:
    """A folder of snapshots as it is; a tar archive of them unpacked once under `home`/demo: the snapshots of its
    busiest `hours`, the stretch the replay serves."""
    if not path.is_file() or not tarfile.is_tarfile(path):
        return path
    target = home / "demo" / path.name / f"busiest-{hours:g}h"
    if (target / ".unpacked").exists():
        return target
    plain = target.parent / "snapshots.tar"
    _decompress(path, plain)
    try:
        with tarfile.open(plain) as archive:
            archive.extractall(target, members=_replayed(archive.getmembers(), hours), filter="data")
    finally:
        plain.unlink()
    (target / ".unpacked").touch()
    return target


def _decompress(path: Path, plain: Path) -> None:
    """The archive as a plain tar (whatever compression tarfile recognised, undone in one pass)."""
    plain.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path) as archive, plain.open("wb") as target:
        source = archive.fileobj
        assert source is not None
        source.seek(0)
        while chunk := source.read(1 << 20):
            target.write(chunk)


def _replayed(members: list[tarfile.TarInfo], hours: float) -> list[tarfile.TarInfo]:
    """The feed snapshots taken in the busiest `hours` of the archive."""
    snapshots = [m for m in members if m.isfile() and PurePosixPath(m.name).suffix.lower() in FEED_SUFFIXES]
    taken = [_taken(m) for m in snapshots]
    if not taken:
        return []
    stretch = Replay.busiest(taken, hours, 1, taken[0])
    return [m for m, at in zip(snapshots, taken, strict=True) if stretch.start <= at <= stretch.end]


def _taken(member: tarfile.TarInfo) -> datetime:
    return stamped(PurePosixPath(member.name).name) or datetime.fromtimestamp(member.mtime, UTC)
