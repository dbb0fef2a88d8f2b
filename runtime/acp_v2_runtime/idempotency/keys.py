"""Idempotency keys on the Agent side: validation, the digest that stores keep, and derived message ids.

What makes a key valid (type, length in code points, no lone surrogate) and the error codes are the spec's; they
come from the generated `acp_v2_schema` package. A key is never stored, logged or shown as it is: stores keep
`key_digest(key)`, and every error message here describes the problem without repeating the value.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from typing import Any

from acp_v2_schema.protocol import SESSION_PROMPT, KnownErrorCode
from acp_v2_schema.retry import (
    IDEMPOTENCY_KEY_MAX_LENGTH,
    IDEMPOTENCY_KEY_MIN_LENGTH,
    POLICY,
    KeyProblem,
    idempotency_key_problem,
)

INVALID_PARAMS = int(KnownErrorCode.INVALID_PARAMS)
REQUEST_CANCELLED = int(KnownErrorCode.REQUEST_CANCELLED)
INTERNAL_ERROR = int(KnownErrorCode.INTERNAL_ERROR)

_PROMPT_KEY = POLICY[(SESSION_PROMPT, "request")].key_param  # the retry table's, without loading the models
assert _PROMPT_KEY is not None, "the spec makes session/prompt a keyed method"
KEY_PARAM: str = _PROMPT_KEY
"""The key's parameter name in `session/prompt` (the spec's), named in the data of a key error."""
MALFORMED_KEY, KEY_REUSED = "malformed-key", "key-reused"
"""The `reason` of InvalidParamsErrorData for a key that is not valid and for a key that belongs to another prompt
(the spec's words; a test checks them against the spec's description of the field)."""

# A fixed namespace for derived message ids, so that every Agent built on this package derives the same id from
# the same (sessionId, key) pair. It was drawn at random once; it carries no meaning.
MESSAGE_ID_NAMESPACE = uuid.UUID("6f1d2a4e-93c8-4b57-a0e2-7c15d9b3e846")


class LedgerError(Exception):
    """A JSON-RPC error that answers a keyed prompt; `code`, `message` and `data` go into the error response."""

    data: dict[str, Any] | None = None
    """The error's `data` member, when it has one (a key error's InvalidParamsErrorData)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC error object, with `data` when the error has some."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def _key_error_data(reason: str) -> dict[str, Any]:
    """The InvalidParamsErrorData of a key error, made through the generated model so it has the spec's shape."""
    from acp_v2_schema.models import InvalidParamsErrorData  # the models load on first use: most prompts never err

    return InvalidParamsErrorData(param=KEY_PARAM, reason=reason).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )


class InvalidKey(LedgerError):
    """The key is present but not a valid idempotency key (-32602); `problem` says why."""

    def __init__(self, problem: KeyProblem, detail: str) -> None:
        super().__init__(INVALID_PARAMS, f"Invalid params: {KEY_PARAM} {detail}")
        self.problem = problem

    @property
    def data(self) -> dict[str, Any]:  # type: ignore[override]
        """InvalidParamsErrorData: the key parameter, `malformed-key`."""
        return _key_error_data(MALFORMED_KEY)


class KeyReused(LedgerError):
    """A recorded or pending key came back with a different prompt (-32602); nothing was inserted."""

    def __init__(self) -> None:
        super().__init__(INVALID_PARAMS, f"Invalid params: this {KEY_PARAM} belongs to a different prompt")

    @property
    def data(self) -> dict[str, Any]:  # type: ignore[override]
        """InvalidParamsErrorData: the key parameter, `key-reused`."""
        return _key_error_data(KEY_REUSED)


class Cancelled(LedgerError):
    """The prompt was cancelled before insertion; every pending attempt with its key gets this (-32800)."""

    def __init__(self) -> None:
        super().__init__(REQUEST_CANCELLED, "Request cancelled before the message was inserted")


class StoreUnavailable(LedgerError):
    """The key store did not answer within its bound (-32603); nothing was inserted for this attempt, and the key
    stays unused as far as this attempt goes: a late insert of its transaction is refused (see `store`)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(INTERNAL_ERROR, f"Internal error: the key store did not answer within {seconds:g} s")
        self.seconds = seconds


class InvalidSessionId(LedgerError):
    """The session id cannot scope keys in every store (-32602); `reason` says why, without the value."""

    def __init__(self, reason: str) -> None:
        super().__init__(INVALID_PARAMS, f"Invalid params: sessionId {reason}")
        self.reason = reason


MAX_SESSION_ID_BYTES = 1024
"""The longest session id (in UTF-8 bytes) the ledger keeps. The spec sets no limit; this one is the ledger's own,
so that every store can index the id (PostgreSQL refuses index entries of a few kilobytes)."""


def validate_session_id(value: object) -> str:
    """`value` when it can scope keys in every store; raises InvalidSessionId otherwise.

    The rules are those that all three stores can keep the same way: a string (the generated `SessionId` is one)
    that has a UTF-8 form (no lone surrogate), holds no NUL character (PostgreSQL text cannot) and is at most
    MAX_SESSION_ID_BYTES long. The empty string is a valid id. The error never repeats the value.
    """
    if not isinstance(value, str):
        raise InvalidSessionId(f"must be a string, not {_json_type(value)}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidSessionId("contains a lone surrogate, which has no UTF-8 form") from None
    if "\x00" in value:
        raise InvalidSessionId("contains a NUL character")
    if size > MAX_SESSION_ID_BYTES:
        raise InvalidSessionId(f"is {size} bytes long; the key ledger keeps ids of at most {MAX_SESSION_ID_BYTES}")
    return value


def validate_key(value: object) -> str | None:
    """The key of a `session/prompt`, or None when it is omitted or null. Raises InvalidKey for anything else.

    The check is the generated `idempotency_key_problem`: lengths count Unicode code points, as JSON Schema does,
    no other type is ever coerced to a string, and a lone surrogate (no UTF-8 form) is rejected.
    """
    if value is None:
        return None
    problem = idempotency_key_problem(value)
    if problem is not None:
        raise InvalidKey(problem, _describe(problem, value))
    assert isinstance(value, str)  # idempotency_key_problem accepts nothing else
    return value


def _describe(problem: KeyProblem, value: object) -> str:
    """A short reason for the error message; it never repeats the value."""
    if problem is KeyProblem.NOT_A_STRING:
        return f"must be a string or null, not {_json_type(value)}"
    return f"is not a valid key ({problem.value})"


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if value is None:
        return "null"
    return type(value).__name__


# CPython's own SHA-256, the same digest as OpenSSL's: for a key's or a prompt's few hundred bytes it costs less,
# as OpenSSL's per-call set-up dominates. On an Agent's path, where each digest comes between two thread hops,
# OpenSSL's took nearly three times as long as in a tight loop and CPython's about 1.2 times.
try:
    from _sha256 import sha256 as _SHA256  # Python 3.10 and 3.11
except ImportError:
    try:
        from _sha2 import sha256 as _SHA256  # Python 3.12 on
    except ImportError:  # a build without them: hashlib's (OpenSSL's), the same digest
        _SHA256 = hashlib.sha256


def key_digest(key: str) -> str:
    """What stores keep in place of the key: a SHA-256 hex digest of its UTF-8 bytes."""
    try:
        return _SHA256(key.encode()).hexdigest()  # the common case, and the quickest: no lone surrogate
    except UnicodeEncodeError:
        return _SHA256(key.encode("utf-8", "surrogatepass")).hexdigest()


def checked_key_digest(value: object) -> str | None:
    """`key_digest(validate_key(value))` in one step: the digest of a valid key, None when there is no key.

    Raises InvalidKey as `validate_key` does. A string whose length is within the generated limits and whose UTF-8
    encoding succeeds is exactly what `idempotency_key_problem` accepts (the encoding fails on a lone surrogate,
    the one other thing it rejects), so such a key is digested straight from those bytes; any other value gets the
    generated check, for its error.
    """
    if value is None:
        return None
    if type(value) is str and _MIN_KEY <= len(value) <= _MAX_KEY:
        try:
            return _SHA256(value.encode()).hexdigest()
        except UnicodeEncodeError:
            pass  # a lone surrogate: validate_key raises below
    checked = validate_key(value)  # raises, unless `value` is a valid key of a subclass of str
    assert checked is not None
    return key_digest(checked)


_MIN_KEY, _MAX_KEY = IDEMPOTENCY_KEY_MIN_LENGTH, IDEMPOTENCY_KEY_MAX_LENGTH


def checked_key(value: object) -> str | None:
    """`validate_key(value)` with the common case made quick: the key itself (a plain `str`), None when there is none.

    For a store that never lets a key leave the process (`keeps_keys`), which needs no digest. A string within the
    generated length limits that is ASCII, or else has a UTF-8 encoding, is what `idempotency_key_problem` accepts;
    any other value gets the generated check, for its error. A valid key of a subclass of str comes back as a plain
    str, so that its own hashing or equality cannot change which row it finds.
    """
    if value is None:
        return None
    if type(value) is str and _MIN_KEY <= len(value) <= _MAX_KEY:
        if value.isascii():
            return value
        try:
            value.encode()
        except UnicodeEncodeError:
            pass  # a lone surrogate: validate_key raises below
        else:
            return value
    checked = validate_key(value)  # raises, unless `value` is a valid key of a subclass of str
    assert checked is not None
    return str.__str__(checked)


def derive_message_id(session_id: str, key: str) -> str:
    """A messageId that follows from (sessionId, key): a UUID v5, for runtimes that store the id with the message.

    The session id is length-prefixed so that no two different pairs can produce the same name.
    """
    name = f"{len(session_id)}:{session_id}{key}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha1(MESSAGE_ID_NAMESPACE.bytes + name).digest()  # what RFC 9562 prescribes for v5
    return str(uuid.UUID(bytes=digest[:16], version=5))


# `json.dumps` with options builds a new encoder on every call; one kept here gives the same text for less.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _c_canonical() -> Callable[[object], str] | None:
    """The C encoder behind `_CANONICAL`, made once: `JSONEncoder.encode` makes it again for every value, which costs
    as much as the encoding of a short prompt. None when the C accelerator is missing or does not give the same
    text. It is made without the table of containers being encoded that detects cycles (a table kept from call to
    call would keep an entry after a failed encoding); a cyclic prompt, which no JSON message can hold, raises
    RecursionError instead of ValueError."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    try:
        iterencode = make(
            None, _CANONICAL.default, json.encoder.encode_basestring_ascii, None, ":", ",", True, False, True
        )
        sample = [{"b": [1, 2.5, None, True], "a": "\u00e9\ud83d\ude00\n"}, {}]
        if "".join(iterencode(sample, 0)) != _CANONICAL.encode(sample):
            return None
    except Exception:  # another Python's signature: use the encoder's own method
        return None
    return lambda prompt: "".join(iterencode(prompt, 0))


_ENCODE = _c_canonical() or _CANONICAL.encode


def prompt_fingerprint(prompt: object) -> str:
    """A digest of the prompt content, so that a key reused with a different prompt can be noticed.

    Numbers count by value, as JSON means them: `1.0`, `1e0` and `1` are one number, so a retry whose sender spells
    it otherwise is the same prompt. Text order of members does not count either (the encoding sorts them).
    """
    text = _ENCODE(prompt)
    # An integral float is written with ".0" or an exponent "e+": without either in the text there is none (an
    # integer never has them), so the common prompt is encoded once.
    if ".0" in text or "e+" in text:
        text = _ENCODE(_integral_as_int(prompt))
    return _SHA256(text.encode("ascii")).hexdigest()


def _integral_as_int(value: object) -> object:
    """`value` with every float that holds a whole number replaced by that integer (the same number in JSON)."""
    if type(value) is float:
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {name: _integral_as_int(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_integral_as_int(item) for item in value]
    return value


class Fingerprint:
    """A prompt's fingerprint, worked out the first time it is needed and then kept (the prompt is let go).

    Most keyed prompts are never retried, so a store that keeps prompts as they are (the memory store) never pays
    for the digest unless a retry comes to compare: the ledger wraps what the row gave back in one of these then.
    The prompt must not be changed after it is submitted, as for any message that has been inserted.
    """

    __slots__ = ("_prompt", "_value")

    def __init__(self, prompt: object) -> None:
        self._prompt = prompt
        self._value: str | None = None

    @property
    def value(self) -> str:
        """The digest, as `prompt_fingerprint` makes it."""
        if self._value is None:
            self._value = prompt_fingerprint(self._prompt)
            self._prompt = None
        return self._value

    def __repr__(self) -> str:
        return "Fingerprint()"


def fingerprint_text(fingerprint: str | Fingerprint | None) -> str | None:
    """The digest of a fingerprint that may not be worked out yet (None stays None)."""
    return fingerprint.value if isinstance(fingerprint, Fingerprint) else fingerprint


def fingerprints_differ(a: str | Fingerprint | None, b: str | Fingerprint | None) -> bool:
    """Whether two prompts are known to differ: both fingerprints are present and not the same."""
    if a is None or b is None or a is b:
        return False
    return fingerprint_text(a) != fingerprint_text(b)
