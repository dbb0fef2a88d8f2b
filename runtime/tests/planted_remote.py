"""Remote-side planted bugs: a served reference Agent, or something in front of it, breaking one promise.

    python planted_remote.py --bug NAME -- --listen HOST:PORT --db URL     # a node with the bug (a cluster node)
    python planted_remote.py --bug key-dropping-proxy -- --listen HOST:PORT --upstream URL   # a proxy

Without `--bug` the node is the reference Agent itself. `BUGS` says what each one breaks; test_history_remote.py
runs each behind the balancer and shows the check that catches it. The bugs are the reference code with one
change, so that what is caught is the bug and nothing else:

- memory-keys: each node keeps its key records in a dict of its own process (the insertion itself goes to the
  shared store): a retry that reaches another node inserts again.
- early-answer: the answer (and the user_message update) goes out as soon as the insert is written inside the
  store's transaction, and the commit comes a moment later: a node killed in between answered a message that the
  store never holds.
- key-dropping-proxy: a relay in front of the balancer (the kit's own fault proxy) that removes `idempotencyKey`
  from every session/prompt it forwards: every retry is a new message.
- crossed-answers: an `AcpServer` (a subclass) whose Agent answers reach the newest other live connection: a
  connection is told another connection's messageId under its own request id.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from acp_v2_schema import protocol as M

from acp_v2_runtime import reference_agent as ref
from acp_v2_runtime.idempotency import KeyLedger
from acp_v2_runtime.idempotency.ledger import Submitted
from acp_v2_runtime.reference_agent import remote as served
from acp_v2_runtime.remote import AcpServer, AgentFactory, Send

BUGS = {
    "memory-keys": "each node keeps its key records in its own memory: a retry on another node inserts again",
    "early-answer": "a node answers a keyed prompt before the store committed its message",
    "key-dropping-proxy": "a proxy in front of the balancer drops idempotencyKey from every session/prompt",
    "crossed-answers": "the server delivers one connection's prompt answer to another connection",
}

LATE_COMMIT_SECONDS = 2.0
"""early-answer: how long the commit waits after the answer went out (well within the store's own bounds)."""

KEY = "idempotencyKey"


def _memory_keys() -> None:
    original = KeyLedger.submit
    recorded: dict[tuple[str, str], str] = {}  # (session, key) -> messageId: this process's memory, no one else's

    async def submit(self: Any, session_id: str, key: object, attempt: Any, **kwargs: Any) -> Submitted:
        if not isinstance(key, str) or not key:
            return await original(self, session_id, key, attempt, **kwargs)  # no key, or a bad one: as before
        slot = (session_id, key)
        if slot in recorded:
            return Submitted(recorded[slot], False)
        got = await original(self, session_id, None, attempt, **kwargs)  # inserted with no key bookkeeping
        recorded[slot] = got.message_id
        return got

    KeyLedger.submit = submit  # type: ignore[method-assign]


def _early_answer() -> None:
    original = KeyLedger.submit

    async def submit(self: Any, session_id: str, key: object, attempt: Any, **kwargs: Any) -> Submitted:
        write = kwargs.get("write")
        if key is None or write is None:
            return await original(self, session_id, key, attempt, **kwargs)
        loop = asyncio.get_running_loop()
        written: asyncio.Future[str] = loop.create_future()

        def late_write(conn: Any, message_id: str) -> None:
            write(conn, message_id)  # in the store's thread, inside its transaction
            loop.call_soon_threadsafe(lambda: written.done() or written.set_result(message_id))
            if threading.current_thread() is not threading.main_thread():
                time.sleep(LATE_COMMIT_SECONDS)  # the transaction stays open: the commit comes after the answer

        whole = asyncio.ensure_future(original(self, session_id, key, attempt, **{**kwargs, "write": late_write}))
        done, _ = await asyncio.wait({whole, written}, return_when=asyncio.FIRST_COMPLETED)
        if written in done and not whole.done():
            return Submitted(written.result(), True)  # answered now; the commit is still to come
        return await whole

    KeyLedger.submit = submit  # type: ignore[method-assign]


class CrossedServer(AcpServer):
    """Our `AcpServer` with one wrong wire: a prompt's answer goes to the newest other live connection."""

    def __init__(self, factory: AgentFactory, **options: Any) -> None:
        live: list[Send] = []  # each live connection's send callback, oldest first

        async def make(send: Send) -> Any:
            live.append(send)

            def crossed(message: dict[str, Any]) -> None:
                result = message.get("result")
                others = [s for s in live if s is not send]
                if "method" not in message and isinstance(result, dict) and "messageId" in result and others:
                    others[-1](message)
                    return
                send(message)

            agent = factory(crossed)
            agent = await agent if inspect.isawaitable(agent) else agent
            return _Forgetting(agent, lambda: send in live and live.remove(send))

        super().__init__(make, **options)


class _Forgetting:
    """An Agent that runs `gone` when its connection ends."""

    def __init__(self, agent: Any, gone: Callable[[], object]) -> None:
        self.agent, self.gone = agent, gone

    def receive(self, data: bytes) -> None:
        self.agent.receive(data)

    async def close(self) -> None:
        self.gone()
        await self.agent.close()


def _crossed_answers() -> None:
    served.AcpServer = CrossedServer  # type: ignore[misc]  # what `--listen` serves its Agents with


def drop_key(message: Any) -> Any:
    """A session/prompt without its key (what the key-dropping proxy forwards); anything else unchanged."""
    if isinstance(message, dict) and message.get("method") == M.SESSION_PROMPT:
        params = message.get("params")
        if isinstance(params, dict) and KEY in params:
            return {**message, "params": {k: v for k, v in params.items() if k != KEY}}
    return message


def _rewrite(data: bytes | str) -> bytes | str:
    try:
        message = json.loads(data)
    except ValueError:
        return data
    changed = drop_key(message)
    if changed is message:
        return data
    text = json.dumps(changed)
    return text.encode() if isinstance(data, bytes) else text


def key_dropping(app: Any) -> Any:
    """An ASGI app in front of `app` that drops the key from each session/prompt a Client sends (both profiles)."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST":
            chunks, more = [], True
            while more:
                message = await receive()
                chunks.append(message.get("body", b""))
                more = message.get("type") == "http.request" and message.get("more_body", False)
            body, given = _rewrite(b"".join(chunks)), False

            async def replay() -> dict[str, Any]:
                nonlocal given
                if given:
                    return dict(await receive())
                given = True
                return {"type": "http.request", "body": body, "more_body": False}

            await app(scope, replay, send)
        elif scope["type"] == "websocket":

            async def rewriting() -> dict[str, Any]:
                message = dict(await receive())
                if message.get("type") == "websocket.receive" and message.get("text") is not None:
                    message["text"] = _rewrite(message["text"])
                return message

            await app(scope, rewriting, send)
        else:
            await app(scope, receive, send)

    return wrapped


def _key_dropping_proxy(argv: list[str]) -> int:
    """The kit's fault proxy (`--listen HOST:PORT --upstream URL`) behind `key_dropping`; prints its URL first."""
    from acp_v2_runtime.conformance.network.app import FaultProxy
    from acp_v2_runtime.conformance.network.serve import server
    from acp_v2_runtime.remote.serve import bind, url_of

    options = dict(zip(argv[::2], argv[1::2], strict=False))
    host, _, port = options["--listen"].rpartition(":")
    sock = bind(host, int(port))
    print(f"key-dropping proxy on {url_of(sock)} -> {options['--upstream']}", flush=True)
    server(key_dropping(FaultProxy(options["--upstream"]))).run(sockets=[sock])
    return 0


PLANT: dict[str, Callable[[], None]] = {
    "memory-keys": _memory_keys,
    "early-answer": _early_answer,
    "crossed-answers": _crossed_answers,
}


def main(argv: list[str]) -> int:
    bug = None
    while argv and argv[0] != "--":
        flag, value, *argv = argv
        if flag != "--bug" or value not in BUGS:
            raise SystemExit(f"planted_remote: unknown flag or bug {flag} {value} (bugs: {', '.join(BUGS)})")
        bug = value
    rest = argv[1:]
    if bug == "key-dropping-proxy":
        return _key_dropping_proxy(rest)
    if bug is not None:
        PLANT[bug]()
    return ref.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
