"""Child processes that die with their parent, and stopping a process politely, then firmly."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import psutil

_PR_SET_PDEATHSIG = 1


def child_setup(death_signal: int, user: str | None = None) -> Callable[[], None]:
    """For Popen(preexec_fn=...): drop to `user` (if given), then ask Linux to signal us if the parent dies.

    The order matters: a credential change clears the parent-death signal.
    """

    def setup() -> None:
        if user is not None:
            import pwd

            entry = pwd.getpwnam(user)
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError):
                ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, death_signal)

    return setup


def stop_process(pid: int, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
    """Send `sig`, wait up to `timeout`, then SIGKILL. Quiet if the process is already gone."""
    try:
        process = psutil.Process(pid)
        process.send_signal(sig)
        process.wait(timeout)
    except psutil.NoSuchProcess:
        return
    except psutil.TimeoutExpired:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
            process.wait(5)


def wait_child(popen: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        popen.wait(timeout)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait(5)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def wait_for_port(port: int, *, timeout: float, alive: Callable[[], bool], host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError(f"the process meant to listen on {host}:{port} exited")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listened on {host}:{port} within {timeout:.0f} s")


def is_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def command_line(pid: int) -> str:
    """What a process runs (its name when the command line is hidden); empty when it is gone."""
    try:
        process = psutil.Process(pid)
        return " ".join(process.cmdline()) or process.name()
    except psutil.Error:
        return ""
