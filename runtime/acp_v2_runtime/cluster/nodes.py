"""The Agent nodes behind the balancer: one process each, started from a command with a `{port}` placeholder, on
a port of its own that stays the node's across restarts (the balancer's configuration names it).
"""

from __future__ import annotations

import contextlib
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

PORT, HOST, DB = "{port}", "{host}", "{db}"
"""The placeholders a node command may hold; {port} is required."""


class NodeError(RuntimeError):
    """A node exited at start, or did not listen in time."""


def reference_command(db: str) -> list[str]:
    """The reference Agent served on the remote transport, on the store `db`."""
    return [sys.executable, "-m", "acp_v2_runtime.reference_agent", "--listen", f"{HOST}:{PORT}", "--db", db]


def parse_command(text: str) -> list[str]:
    """A node command from the command line (shell words), checked to hold {port}."""
    words = shlex.split(text)
    if not any(PORT in word for word in words):
        raise ValueError(f"the node command must hold the {PORT} placeholder: {text!r}")
    return words


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing uses now, drawn below the kernel's ephemeral range when there is room there.

    A node keeps its port across restarts, and while it is down an ephemeral port is anyone's: the kernel gives it to
    the next outgoing connection or `bind(0)` on the machine, and the restart then fails to listen. Ports below the
    range are never handed out so; another cluster drawing the same one at random is the remaining (small) risk."""
    low = _ephemeral_low()
    for _ in range(64):
        port = _DRAW.randrange(PRIVATE_FLOOR, low) if low - PRIVATE_FLOOR > 1000 else 0
        with socket.socket() as sock, contextlib.suppress(OSError):
            sock.bind((host, port))
            return int(sock.getsockname()[1])
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


PRIVATE_FLOOR = 20000
"""The lowest port `free_port` draws (well above the ports services are registered on)."""

_DRAW = random.SystemRandom()  # not the module's generator, which a caller may have seeded


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux; elsewhere, the IANA range's 49152)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152


class Node:
    """One Agent process: start, kill (SIGKILL, as a crash), stop (SIGTERM), restart on the same port."""

    def __init__(self, name: str, command: Sequence[str], *, host: str, port: int, db: str, log: Path) -> None:
        self.name = name
        self.command = list(command)
        self.host = host
        self.port = port
        self.db = db
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.extra: tuple[str, ...] = ()
        """The extra arguments of the current (or last) run."""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def argv(self, extra: Sequence[str] = ()) -> list[str]:
        """The command with its placeholders filled, then `extra` arguments."""
        filled = [w.replace(PORT, str(self.port)).replace(HOST, self.host).replace(DB, self.db) for w in self.command]
        return [*filled, *extra]

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, extra: Sequence[str] = (), timeout: float = 30.0) -> None:
        """Start the process (with `extra` arguments after the command) and wait until its port accepts."""
        if self.running:
            raise NodeError(f"{self.name} is already running")
        self.extra = tuple(extra)
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        with self.log.open("ab") as log:
            log.write(f"== {self.name}: {shlex.join(self.argv(extra))}\n".encode())
            log.flush()
            # A session of its own: a kill reaches the node and whatever it started, and the launcher's Ctrl-C
            # does not reach the node before the launcher stops it in order.
            self.process = subprocess.Popen(
                self.argv(extra), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while not _accepts(self.host, self.port):
            if self.process.poll() is not None:
                raise NodeError(f"{self.name} exited at start ({self.process.returncode}); see {self.log}")
            if time.monotonic() > deadline:
                raise NodeError(f"{self.name} did not listen on {self.address} in {timeout:.0f}s; see {self.log}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL the node and everything it started, as a crash would: no answer, no goodbye."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        self._signal(signal.SIGTERM, grace=10.0)

    def _signal(self, sig: signal.Signals, grace: float = 10.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.process = None


def _accepts(host: str, port: int) -> bool:
    connect_to = "127.0.0.1" if host in ("0.0.0.0", "") else host
    with contextlib.suppress(OSError), socket.create_connection((connect_to, port), timeout=1):
        return True
    return False
