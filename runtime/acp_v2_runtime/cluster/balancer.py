"""HAProxy in front of the nodes: its configuration (filled from the template kept beside this module), its
process, and what its runtime API says about each node.
"""

from __future__ import annotations

import contextlib
import csv
import io
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from string import Template

TEMPLATE = Path(__file__).with_name("haproxy.cfg.in")
BACKEND = "agents"
"""The backend's name in the template: the runtime API is asked about the servers of this one."""
MONITOR_URI = "/haproxy-alive"
"""Answered 200 by HAProxy itself while it runs; never forwarded to a node."""


class BalancerError(RuntimeError):
    """HAProxy is missing, refused the configuration, or did not start."""


@dataclass(frozen=True)
class Settings:
    """The values the template leaves open. Durations are HAProxy's (`10s`, `500ms`, `1h`)."""

    listen: str
    """host:port the balancer binds."""
    servers: tuple[tuple[str, str], ...]
    """(name, host:port) of each node, in order; the name is also the affinity cookie's value."""
    stats_socket: Path
    health_path: str = "/"
    cookie: str = "ACPNODE"
    idle_timeout: str = "60s"
    tunnel_timeout: str = "1h"
    connect_timeout: str = "1s"
    check_interval: str = "1s"
    fall: int = 2
    retries: int = 2
    maxconn: int = 4096
    extra: tuple[str, ...] = ()
    """Lines added at the end of the backend (e.g. `no option http-no-delay`, to measure what it is for)."""


def render(settings: Settings) -> str:
    """The HAProxy configuration for `settings` (every placeholder filled, or KeyError)."""
    servers = "\n".join(f"    server {name} {address} cookie {name}" for name, address in settings.servers)
    values = {
        "listen": settings.listen,
        "servers": servers,
        "stats_socket": str(settings.stats_socket),
        "health_path": settings.health_path,
        "cookie": settings.cookie,
        "idle_timeout": settings.idle_timeout,
        "tunnel_timeout": settings.tunnel_timeout,
        "connect_timeout": settings.connect_timeout,
        "check_interval": settings.check_interval,
        "fall": str(settings.fall),
        "retries": str(settings.retries),
        "maxconn": str(settings.maxconn),
        "extra": "\n".join(f"    {line}" for line in settings.extra),
        "monitor_uri": MONITOR_URI,
    }
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(values)


def haproxy_binary() -> str:
    """The haproxy program on PATH (or in /usr/sbin, where Debian puts it), or BalancerError."""
    found = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise BalancerError("haproxy is not installed (Debian: apt-get install haproxy; CI: .ci/setup.d/31-haproxy.sh)")
    return found


class Balancer:
    """One haproxy process run in the foreground with a rendered configuration; its log goes to `log`."""

    def __init__(self, settings: Settings, workdir: Path) -> None:
        self.settings = settings
        self.config = workdir / "haproxy.cfg"
        self.log = workdir / "haproxy.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> None:
        """Write the configuration, check it, start haproxy and wait until it answers its monitor URI."""
        binary = haproxy_binary()
        self.config.write_text(render(self.settings), encoding="utf-8")
        checked = subprocess.run([binary, "-c", "-q", "-f", str(self.config)], capture_output=True, text=True)
        if checked.returncode != 0:
            raise BalancerError(f"haproxy refused {self.config}:\n{checked.stdout}{checked.stderr}")
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [binary, "-db", "-f", str(self.config)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        host, port = split_address(self.settings.listen)
        deadline = time.monotonic() + timeout
        while not _answers(host, port):
            if self.process.poll() is not None:
                raise BalancerError(f"haproxy exited at start ({self.process.returncode}); see {self.log}")
            if time.monotonic() > deadline:
                raise BalancerError(f"haproxy did not answer on {self.settings.listen} in {timeout:.0f}s")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop haproxy (SIGTERM: a hard stop, which closes every connection at once), and wait for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def command(self, line: str) -> str:
        """Send one command to HAProxy's runtime API and return its answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.settings.stats_socket))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def states(self) -> dict[str, str]:
        """Each node's status as HAProxy sees it now: `UP`, `DOWN`, `UP 1/2` (going down), `DOWN 1/1`, …"""
        rows = csv.DictReader(io.StringIO(self.command("show stat").lstrip("# ")))
        return {row["svname"]: row["status"] for row in rows if row["pxname"] == BACKEND and row["type"] == "2"}

    def wait_for(self, name: str, status: str, timeout: float = 30.0) -> None:
        """Wait until HAProxy reports node `name` exactly `status` (`UP` or `DOWN`), or TimeoutError."""
        deadline = time.monotonic() + timeout
        while (seen := self.states().get(name)) != status:
            if time.monotonic() > deadline:
                raise TimeoutError(f"HAProxy still reports {name} as {seen!r}, not {status!r}, after {timeout:.0f}s")
            time.sleep(0.05)


def split_address(address: str) -> tuple[str, int]:
    """("host", port) from "host:port" (a bracketed IPv6 host loses its brackets)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"not host:port: {address!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def _answers(host: str, port: int) -> bool:
    connect_to = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    with contextlib.suppress(OSError), socket.create_connection((connect_to, port), timeout=1) as sock:
        sock.sendall(f"GET {MONITOR_URI} HTTP/1.0\r\n\r\n".encode())
        return sock.recv(64).split(b" ")[1:2] == [b"200"]
    return False
