"""The little the relays need from ASGI: headers in and out, a whole body, a plain answer, waiting for the Client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
"""Headers that describe one hop, not the message: never passed on (the next hop sets its own)."""


def header(scope: Scope, name: str) -> str | None:
    """The first value of the request header `name` (lower case), decoded as Latin-1 as HTTP allows."""
    wanted = name.encode("latin-1")
    for key, value in scope.get("headers", ()):
        if key == wanted:
            return value.decode("latin-1")
    return None


def end_to_end(headers: Iterable[tuple[bytes, bytes]] | Iterable[tuple[str, str]], *drop: str) -> list[tuple[str, str]]:
    """The headers worth passing on: hop-by-hop ones and `drop` left out, names lower-cased."""
    skip = HOP_BY_HOP | set(drop)
    found = []
    for key, value in headers:
        name = key.decode("latin-1") if isinstance(key, bytes) else key
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        if name.lower() not in skip:
            found.append((name.lower(), text))
    return found


def encoded(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]


async def read_body(receive: Any) -> bytes:
    """The whole request body (the ASGI server has already framed it)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def client_left(receive: Any, limit: float) -> bool:
    """Waits until the Client closes its request (True) or `limit` seconds pass (False)."""

    async def disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(disconnect(), limit)
    except asyncio.TimeoutError:  # the builtin TimeoutError only from Python 3.11
        return False
    return True


async def answer(send: Any, status: int, body: bytes, headers: Iterable[tuple[str, str]] = ()) -> None:
    """A whole response: status, headers (with its length), body."""
    fields = [*headers, ("content-length", str(len(body)))]
    await send({"type": "http.response.start", "status": status, "headers": encoded(fields)})
    await send({"type": "http.response.body", "body": body})


async def text(send: Any, status: int, message: str) -> None:
    await answer(send, status, message.encode(), [("content-type", "text/plain; charset=utf-8")])
