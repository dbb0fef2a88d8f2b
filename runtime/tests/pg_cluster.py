"""A private PostgreSQL cluster for the tests that stop, restart or freeze the server.

Those tests must never touch the server other tests share, so each run makes its own cluster: `initdb` into a
temporary directory as the `postgres` user (as `.ci/setup.d/30-postgresql.sh` does for the shared one), a port of
its own, passwords checked on TCP (so a wrong one is refused), one role and one database. It needs root (to act
as `postgres`) and Debian's server binaries; without them `skip_or_fail` skips on a developer's machine and fails
under CI=true, as conftest.py does for the shared server.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROLE, PASSWORD, DATABASE = "agents", "agents-secret", "agents"


def _binaries() -> Path | None:
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")]
    found.sort(key=lambda p: [int(x) for x in p.parent.name.split(".") if x.isdigit()])
    return found[-1] if found else None


def skip_or_fail(reason: str) -> None:
    """Skip the test (a failure under CI=true, where the job must run)."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(parent: int) -> list[int]:
    """The processes whose parent is `parent` (read from /proc, so no tool is needed)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the command name (2nd field) may hold spaces: the parent id is the 2nd field after its ')'
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(stat.parent.name))
    return found


class Cluster:
    """A PostgreSQL server of this test run alone: start, stop, restart, freeze and thaw it."""

    def __init__(self) -> None:
        bin_dir = _binaries()
        if os.geteuid() != 0 or bin_dir is None or shutil.which("runuser") is None:
            skip_or_fail("a private PostgreSQL cluster needs root (to run as postgres) and the server binaries")
        assert bin_dir is not None
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="acp-agents-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.root.chmod(0o755)
        self.data.mkdir(mode=0o700)
        shutil.chown(self.data, "postgres", "postgres")
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        shutil.chown(pwfile, "postgres", "postgres")
        self._as_pg(
            "initdb", "-D", str(self.data), "--username=postgres", "--encoding=UTF8",
            "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}",
        )  # fmt: skip
        pwfile.unlink()
        self.start()
        create = f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'; CREATE DATABASE {DATABASE} OWNER {ROLE};"
        for statement in create.split(";"):
            if statement.strip():
                self._as_pg(
                    "psql", "-h", str(self.data), "-p", str(self.port), "-U", "postgres", "-qAt", "-c", statement
                )

    def _as_pg(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", str(self.bin / tool), *args],
            capture_output=True, text=True, timeout=120, check=check, cwd=self.root,
        )  # fmt: skip

    def url(self, password: str = PASSWORD, **options: str) -> str:
        """The database's URL (over TCP, so the password is checked); `options` become query parameters."""
        query = "&".join(f"{name}={value}" for name, value in options.items())
        return f"postgresql://{ROLE}:{password}@127.0.0.1:{self.port}/{DATABASE}" + (f"?{query}" if query else "")

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.data} -c max_connections=200 -c fsync=off"
        self._as_pg("pg_ctl", "-D", str(self.data), "-l", str(self.data / "server.log"), "-w", "-t", "120",
                    "start", "-o", options)  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._as_pg("pg_ctl", "-D", str(self.data), "-w", "-t", "120", "-m", mode, "stop", check=False)

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def _pids(self) -> list[int]:
        """The postmaster and every process it started (backends, background workers)."""
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return []
        main = int(pid_file.read_text().split()[0])
        return [main, *_children(main)]

    def freeze(self) -> None:
        """Stop every process of the server (SIGSTOP): connections stay open and nothing answers."""
        for pid in self._pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """Let every process of the server go on (SIGCONT), the postmaster last, so no backend is missed."""
        pids = self._pids()
        for pid in [*pids[1:], *pids[:1]]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        time.sleep(0.1)
        for pid in self._pids():  # a backend forked just before the freeze
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def destroy(self) -> None:
        self.thaw()
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


_SHARED: list[Cluster] = []


def shared_cluster() -> Cluster:
    """The one private cluster of this test run, made on first use (the caller's skip if it cannot be)."""
    if not _SHARED:
        _SHARED.append(Cluster())
        atexit.register(destroy_shared)  # once the whole run is over
    return _SHARED[0]


def destroy_shared() -> None:
    while _SHARED:
        _SHARED.pop().destroy()
