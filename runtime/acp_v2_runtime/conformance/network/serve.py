"""Serving the fault proxy: on uvicorn, in a thread of the caller's process (tests arm faults directly) or as a
command of its own (`python -m acp_v2_runtime.conformance.network`, armed through the control knob)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn

from ...remote.serve import bind, url_of
from .app import CONTROL, DEFAULT_HOLD_LIMIT, FaultProxy
from .faults import Armed, Fault, Killer
from .http_relay import AbruptCut


class _QuietCuts(logging.Filter):
    """uvicorn logs an app's exception as an error; a cut-stream-abrupt is the proxy's own doing, not one."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], AbruptCut))


def server(proxy: FaultProxy) -> uvicorn.Server:
    """A uvicorn server for the proxy: HTTP/1.1 (h11) and WebSocket (websockets' sans-I/O layer), no access log."""
    logging.getLogger("uvicorn.error").addFilter(_QuietCuts())
    config = uvicorn.Config(
        proxy, http="h11", ws="websockets-sansio", lifespan="on", access_log=False, log_level="warning"
    )
    return uvicorn.Server(config)


@dataclass
class RunningProxy:
    """A proxy being served: its address, its app (and plan), and the ways to arm it."""

    url: str
    """The endpoint a Client connects to instead of the upstream (`ws://` the same address for WebSocket)."""
    proxy: FaultProxy

    @property
    def control(self) -> str:
        return self.url.rstrip("/") + CONTROL

    def arm(self, fault: Fault | str, profile: str | None = None) -> Armed:
        """Arms `fault` for the next prompt on `profile` (either when None); see `faults.MEANING`."""
        return self.proxy.plan.arm(fault, profile)


@contextmanager
def running_proxy(
    upstream: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    hold_limit: float = DEFAULT_HOLD_LIMIT,
    killer: Killer | None = None,
) -> Iterator[RunningProxy]:
    """Serves a fault proxy in front of `upstream` in a background thread until the block ends (`killer`: see
    `faults.Killer`)."""
    proxy = FaultProxy(upstream, hold_limit=hold_limit, killer=killer)
    sock = bind(host, port)
    served = server(proxy)
    thread = threading.Thread(target=served.run, kwargs={"sockets": [sock]}, name="fault-proxy", daemon=True)
    thread.start()
    try:
        while not served.started and thread.is_alive():
            threading.Event().wait(0.01)
        if not served.started:
            raise RuntimeError("the fault proxy did not start")
        yield RunningProxy(url_of(sock), proxy)
    finally:
        served.should_exit = True
        thread.join(timeout=10)
        sock.close()
