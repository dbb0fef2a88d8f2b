"""An ACP connection over the remote transport, seen from stdio: a served Agent made to look like an Agent process.

    python -m acp_v2_runtime.remote.bridge --url http://127.0.0.1:8000/ [--profile http|websocket]

Each line read on stdin is one JSON-RPC message for the endpoint; each message from the endpoint comes out on
stdout as one line. The conformance kit starts an Agent command per connection, so with this bridge as that command
every trace and every history runs against a served Agent (one process, one remote connection).

The bridge passes messages through: it never resends and never touches a key. A failure of the transport is never
turned into a JSON-RPC answer: when a request gets `NoResponse` or `NotSent` (a POST answered 502, a stream or a
socket that ended before the answer, a held POST), or the connection itself ends, the bridge says why on stderr
and exits with status 3 at once, without another line, as an Agent process that crashed would. So a Client reading
it sees "no answer", the outcome it may not take for "not inserted"; only an error the Agent sent comes out as an
error answer. When stdin ends, the connection is closed politely (a DELETE on HTTP) and the bridge exits 0.

The Agent's own requests (`session/request_permission`, say) come out with the bridge's ids (`bridge-1`, ...),
and the answers read for them go back to the Agent under the Agent's own ids.

The cookies the endpoint set (a balancer's affinity cookie names the node) are said on stderr, one line
`bridge: cookies NAME=VALUE; ...` each time they change, so that whoever runs the bridge knows which node serves it.
`--cookie NAME=VALUE` sends a cookie from the first request on: with a balancer's affinity cookie, the connection
asks for that node (the balancer picks another, and says so, when the node is down).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
from collections.abc import Sequence
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..client import ErrorResponse, NoResponse, NotSent
from ..reference_agent.transport import read_stdin
from .http_client import HttpConnection
from .rpc import ClientConnection
from .ws_client import WebSocketConnection

PROFILES = ("http", "websocket")
TRANSPORT_FAILED = 3
"""The exit status when the connection failed: what a crash looks like to the process's reader."""
FOREVER = 24 * 3600.0
"""How long a request may wait for its answer: the bridge sets no deadline of its own; its reader does."""


class Bridge:
    """One remote connection carried over this process's stdin and stdout."""

    def __init__(
        self, url: str, profile: str = "http", *, out: Any = None, cookies: Sequence[tuple[str, str]] = ()
    ) -> None:
        self.out = out if out is not None else sys.stdout
        make = WebSocketConnection if profile == "websocket" else HttpConnection
        bridge = self

        class Watched(make):  # type: ignore[valid-type, misc]
            def _fail(self, why: str) -> None:
                super()._fail(why)
                if not self.closed:  # the connection ended under us, not because stdin ended
                    bridge.failed(f"the connection ended: {why}")

        self.jar = CookieJar()
        host = urlsplit(url).hostname or ""
        for name, value in cookies:
            httpx.Cookies(self.jar).set(name, value, domain=host)  # kept in the jar: later Set-Cookies replace it
        self._said = ""
        self.connection: ClientConnection = Watched(
            url, on_notification=self._notification, on_request=self._agent_request, timeout=FOREVER, cookies=self.jar
        )
        self._ids = itertools.count(1)
        self._asked: dict[str, asyncio.Future[dict[str, Any]]] = {}  # the bridge's id -> the Client's answer
        self._tasks: set[asyncio.Task[Any]] = set()
        self.ending = False  # stdin ended: the connection is being closed on purpose

    def write(self, message: dict[str, Any]) -> None:
        """One message out, one line (ASCII-escaped: lossless, whatever code points the Agent sent)."""
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()

    def failed(self, why: str) -> None:
        """The transport failed: say so on stderr and end the process now, as a crash would (no answer written).

        Once stdin has ended, the requests our own close cuts short end quietly instead."""
        if self.ending:
            return
        print(f"bridge: {why}; ending as a crashed Agent would, no answer given", file=sys.stderr, flush=True)
        self.out.flush()
        os._exit(TRANSPORT_FAILED)

    # -- from the endpoint ----------------------------------------------------------------------------------------

    def _notification(self, method: str, params: Any) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.write(message)

    async def _agent_request(self, method: str, params: Any) -> Any:
        own = f"bridge-{next(self._ids)}"
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._asked[own] = answer
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": own, "method": method}
        if params is not None:
            message["params"] = params
        self.write(message)
        reply = await answer
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {}
            raise ErrorResponse(error.get("code", -32603), str(error.get("message", "")), error.get("data"))
        return reply.get("result")

    # -- from stdin -----------------------------------------------------------------------------------------------

    def receive(self, line: bytes) -> None:
        """One line from the Client: a request, a notification, or an answer to the Agent's request."""
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            print("bridge: a line that is not JSON was not sent", file=sys.stderr, flush=True)
            return
        if not isinstance(message, dict):
            print("bridge: a message that is not a JSON object was not sent", file=sys.stderr, flush=True)
            return
        if "method" not in message:
            waiting = self._asked.pop(message.get("id"), None) if isinstance(message.get("id"), str) else None
            if waiting is not None and not waiting.done():
                waiting.set_result(message)
            return
        work = self._request(message) if "id" in message else self._notify(message)
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _request(self, message: dict[str, Any]) -> None:
        rid = message["id"]
        try:
            result = await self.connection.request(message["method"], message.get("params"), rid)
        except ErrorResponse as refusal:  # the Agent's own error answer: the only error that comes out
            error: dict[str, Any] = {"code": refusal.code, "message": refusal.message}
            if refusal.data is not None:
                error["data"] = refusal.data
            self.write({"jsonrpc": "2.0", "id": rid, "error": error})
            return
        except (NoResponse, NotSent) as lost:
            self.failed(f"{message['method']} (id {rid!r}) got no answer: {lost}")
            return
        except Exception as exc:  # whatever broke, it is not an answer from the Agent
            self.failed(f"{message['method']} (id {rid!r}) could not be carried: {type(exc).__name__}: {exc}")
            return
        self.write({"jsonrpc": "2.0", "id": rid, "result": result})
        self._say_cookies()

    def _say_cookies(self) -> None:
        said = "; ".join(f"{c.name}={c.value}" for c in self.jar)
        if said and said != self._said:
            self._said = said
            print(f"bridge: cookies {said}", file=sys.stderr, flush=True)

    async def _notify(self, message: dict[str, Any]) -> None:
        try:
            await self.connection.notify(message["method"], message.get("params"))
        except (NoResponse, NotSent) as lost:
            self.failed(f"the notification {message['method']} was lost: {lost}")

    async def run(self) -> int:
        """Carry messages until stdin ends (then close the connection, 0) or the transport fails (exit 3)."""
        stdin = read_stdin()
        while line := await stdin.readline():
            self.receive(line)
        self.ending = True  # the requests still waiting end with the connection: the Client left
        await asyncio.sleep(0)  # the last lines read get their chance to leave
        await self.connection.close()
        return 0


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m acp_v2_runtime.remote.bridge",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", required=True, help="the served Agent's endpoint (http:// or https://)")
    parser.add_argument("--profile", choices=PROFILES, default="http", help="the remote profile (default http)")
    parser.add_argument(
        "--cookie", action="append", default=[], metavar="NAME=VALUE", help="a cookie to send from the start"
    )
    args = parser.parse_args(argv)
    cookies = []
    for given in args.cookie:
        name, equals, value = given.partition("=")
        if not equals or not name.strip():
            parser.error(f"--cookie takes NAME=VALUE, not {given!r}")
        cookies.append((name.strip(), value.strip()))
    return asyncio.run(Bridge(args.url, args.profile, cookies=cookies).run())


if __name__ == "__main__":
    sys.exit(main())
