"""The Client side of keyed prompts: new keys, a resend helper that follows the retry table, and pending prompts.

    from acp_v2_runtime.client import PendingPrompts, Resender

    resender = Resender(send, pending=PendingPrompts("pending.json"))
    result = await resender.request("session/prompt", {"sessionId": sid, "prompt": blocks})
    ...
    await resender.resend_pending()   # after a reconnect or a restart, once the sessions are resumed

`send(method, params, request_id)` is the application's transport: it returns the result, or raises `NotSent`
(the message never left), `NoResponse` (it may have left, and no answer came: the outcome is unknown) or
`ErrorResponse` (a JSON-RPC error the receiver itself sent for this request). A transport must never turn its own
failures into an `ErrorResponse`: a POST answered 502 by a gateway, an event stream or socket that ended before the
answer, a timeout are `NoResponse`, because the Agent may have inserted the message all the same (the TypeScript
SDK's client reports them as a JSON-RPC -32603 it makes up, which a Resender must not believe).
`acp_v2_runtime.remote` has transports over ACP's remote profiles that keep to this.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_v2_schema.retry import PENDING_PROMPT_MAX_AGE_SECONDS, POLICY, FailureKind, may_resend

Send = Callable[[str, dict[str, Any], int], Awaitable[Any]]

PROTOCOL_VERSION = 2
"""The ACP protocol version this Client speaks in `initialize`."""


def new_idempotency_key() -> str:
    """A fresh key for one user submission: a random UUID v4 (122 bits of entropy), never derived from content."""
    return str(uuid.uuid4())


class SendFailure(Exception):
    """An attempt that did not produce a result; `kind` says what the sender knows about it."""

    kind: FailureKind = FailureKind.NO_RESPONSE


class NotSent(SendFailure):
    """The message never left the sender (no connection, refused before writing): always safe to send again."""

    kind = FailureKind.NOT_SENT


class NoResponse(SendFailure):
    """The message may have been sent but no answer came: the outcome is unknown.

    Every failure the transport made is this: a lost connection, a timeout, an HTTP status other than 2xx for the
    POST that carried the request, an event stream or a socket that ended before the answer.
    """

    kind = FailureKind.NO_RESPONSE


class ErrorResponse(SendFailure):
    """The receiver itself answered the request with a JSON-RPC error; for `session/prompt`, nothing was inserted.

    Only an error the Agent sent is one of these: an error a transport or a proxy makes up for a failure of its own
    (such as the -32603 the TypeScript SDK's client reports for a 502) says nothing about insertion; a transport
    raises `NoResponse` for it instead.
    """

    kind = FailureKind.ERROR_RESPONSE

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data


class OutcomeUnknown(Exception):
    """The request may or may not have taken effect, and the retry table forbids sending it again on our own.

    Keyed prompts that end here stay in the pending store, so `resend_pending` can finish them later.
    """

    def __init__(self, method: str, attempts: int, reason: str) -> None:
        super().__init__(f"{method}: outcome unknown after {attempts} attempt(s) ({reason})")
        self.method, self.attempts, self.reason = method, attempts, reason


@dataclass(frozen=True)
class PendingPrompt:
    """A keyed request whose outcome the Client has not seen yet."""

    key: str
    method: str
    params: dict[str, Any]
    created: float


class PendingPrompts:
    """Keyed requests awaiting an answer, kept in a JSON file (or only in memory when `path` is None).

    A prompt is added before its first attempt and removed when an answer (a result or an error the Agent sent)
    arrives, so whatever is left after a crash, a lost connection or a run of unsent attempts is exactly what
    to resend. Each change rewrites the file atomically (a temporary file, then a rename), so a crash leaves
    either the old or the new list, never half of one. One Client process owns a file.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._items: dict[str, PendingPrompt] = {}
        if self.path is not None and self.path.exists():
            for item in json.loads(self.path.read_text(encoding="utf-8")):
                self._items[item["key"]] = PendingPrompt(item["key"], item["method"], item["params"], item["created"])

    def __repr__(self) -> str:
        return f"PendingPrompts({len(self._items)} pending)"

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[PendingPrompt]:
        return iter(sorted(self._items.values(), key=lambda p: p.created))

    def add(self, key: str, method: str, params: dict[str, Any]) -> None:
        with self._lock:
            if key not in self._items:
                self._items[key] = PendingPrompt(key, method, params, time.time())
                self._save()

    def remove(self, key: str) -> None:
        with self._lock:
            if self._items.pop(key, None) is not None:
                self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        data = [vars(p) for p in self._items.values()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
            out.flush()
            os.fsync(out.fileno())
        Path(tmp).replace(self.path)


class Resender:
    """Sends requests and resends them after failures, as far as the retry table allows.

    For a method with a key parameter (`session/prompt`), a key is attached when the caller gave none and the
    same key goes out on every attempt; each attempt gets a new JSON-RPC id. Between attempts it waits a random
    time up to an exponentially growing bound ("full jitter"), for at most `max_attempts` attempts in all.
    After an error response the generated table decides by the error code as well as the class, so this helper
    keeps no list of codes of its own.
    """

    def __init__(
        self,
        send: Send,
        *,
        pending: PendingPrompts | None = None,
        max_attempts: int = 5,
        base_delay: float = 0.2,
        max_delay: float = 10.0,
        allow_duplicates: bool = False,
        request_ids: Iterator[int] | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.send = send
        self.pending = pending if pending is not None else PendingPrompts()
        self.max_attempts = max_attempts
        self.base_delay, self.max_delay = base_delay, max_delay
        self.allow_duplicates = allow_duplicates
        self._ids = request_ids if request_ids is not None else itertools.count(1)
        self._rng = rng or random.Random()
        self._sleep = sleep

    def delay(self, attempt: int) -> float:
        """How long to wait after failed attempt number `attempt` (1-based)."""
        return self._rng.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))

    async def request(self, method: str, params: dict[str, Any], *, kind: str = "request") -> Any:
        """Send `method` until it succeeds, fails for good, or may not be sent again (OutcomeUnknown).

        Returns the result, or `None` when a repeat after an unanswered attempt is answered with an error the retry
        table counts as success (e.g. -32002 on a repeated `session/close`: the first copy took effect)."""
        entry = POLICY.get((method, kind))
        key_param = entry.key_param if entry is not None else None
        params = dict(params)
        key = None
        if key_param is not None:
            if params.get(key_param) is None:
                params[key_param] = new_idempotency_key()
            key = params[key_param]
            self.pending.add(key, method, params)
        success_errors = entry.success_equivalent_errors if entry is not None else ()
        unknown = False  # some earlier attempt may have taken effect
        for attempt in range(1, self.max_attempts + 1):
            try:
                result = await self.send(method, params, next(self._ids))
            except SendFailure as failure:
                code = failure.code if isinstance(failure, ErrorResponse) else None
                if code is not None and unknown and code in success_errors:
                    self._done(key)
                    return None  # e.g. -32002 on a repeated session/close: the first copy succeeded
                allowed = may_resend(
                    method, kind, failure.kind, key is not None, error_code=code, allow_duplicates=self.allow_duplicates
                )
                if code is not None and not allowed:
                    self._done(key)  # the receiver answered, and a copy would not succeed: the error is final
                    raise
                unknown = unknown or failure.kind is FailureKind.NO_RESPONSE
                if not allowed or attempt == self.max_attempts:
                    if unknown:
                        # A lost answer may have inserted it: the prompt stays pending, for resend_pending().
                        why = "may not resend" if not allowed else "out of attempts"
                        raise OutcomeUnknown(method, attempt, why) from failure
                    if code is not None:
                        self._done(key)  # every attempt was answered, the last with an error: nothing was inserted
                    # Otherwise no attempt got out (NotSent): the prompt stays pending, for resend_pending().
                    raise
                await self._sleep(self.delay(attempt))
            else:
                self._done(key)
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    async def resend_pending(self, *, max_age_seconds: float | None = PENDING_PROMPT_MAX_AGE_SECONDS) -> dict[str, Any]:
        """Resend every stored pending prompt with its original key; call it after resuming the sessions.

        Returns {key: result or exception}. Prompts older than `max_age_seconds` (by default the age the spec
        recommends) are not sent: they are left in the store (and reported as `None`) so the application can show
        them to the user instead. `None` resends every prompt, however old.
        """
        outcomes: dict[str, Any] = {}
        now = time.time()
        for item in list(self.pending):
            if max_age_seconds is not None and now - item.created > max_age_seconds:
                outcomes[item.key] = None
                continue
            try:
                outcomes[item.key] = await self.request(item.method, item.params)
            except (SendFailure, OutcomeUnknown) as exc:
                outcomes[item.key] = exc
        return outcomes

    def _done(self, key: str | None) -> None:
        if key is not None:
            self.pending.remove(key)
