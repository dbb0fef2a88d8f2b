"""Prompts the proxy made a fault for, waiting for their answer: found by connection and JSON-RPC id."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from .faults import Armed, id_key


def as_message(data: str | bytes) -> dict[str, Any] | None:
    """The JSON object a body, event or frame carries, or None for anything else (the Agent judges that)."""
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def is_prompt(message: dict[str, Any] | None) -> bool:
    """A `session/prompt` request (with an id: a notification of that name gets no answer to keep)."""
    return message is not None and message.get("method") == "session/prompt" and "id" in message


@dataclass
class Watch:
    """A prompt whose answer the proxy is waiting for; `answered` is set when it came (or never will)."""

    armed: Armed
    answered: asyncio.Event = field(default_factory=asyncio.Event)


class Watches:
    """The prompts of every connection that have a fault armed, until their answer passes the proxy."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], Watch] = {}

    def add(self, connection: str, armed: Armed) -> Watch:
        """Starts waiting for the answer to the prompt `armed` is bound to, on `connection`."""
        watch = Watch(armed)
        self._open[(connection, id_key(armed.request_id))] = watch
        return watch

    def answer(self, connection: str, message: dict[str, Any] | None) -> Watch | None:
        """The watch `message` answers (a result or an error with a watched id), taken out of the waiting set."""
        if message is None or "method" in message or "id" not in message:
            return None
        if "result" not in message and "error" not in message:
            return None
        watch = self._open.pop((connection, id_key(message["id"])), None)
        if watch is not None:
            watch.armed.answer = message
            watch.answered.set()
        return watch

    def drop(self, connection: str, armed: Armed) -> None:
        """Stops waiting (the connection is gone), waking anyone who waits for the answer."""
        watch = self._open.pop((connection, id_key(armed.request_id)), None)
        if watch is not None:
            watch.answered.set()
