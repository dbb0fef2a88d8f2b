"""The remote transport's wire facts: header names, media types, which methods are session-scoped, and how a
JSON-RPC message is classified for routing, each as the TypeScript SDK 2.4.0's transport reads them.

The methods are ACP's (the generated `acp_v2_schema.protocol` names); `session/load`, `session/set_mode` and
`session/set_model` are ACP v1 methods the SDK's transport still scopes to a session, kept so that a v1 Client's
traffic is routed as the SDK routes it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from acp_v2_schema import protocol as M
from acp_v2_schema.protocol import KnownErrorCode as Code

CONNECTION_HEADER = "acp-connection-id"
SESSION_HEADER = "acp-session-id"
CONNECTION_HEADER_NAME = "Acp-Connection-Id"  # as the SDK writes it on a response
EVENT_STREAM = "text/event-stream"
JSON_TYPE = "application/json"

SESSION_LOAD = "session/load"  # ACP v1: its answer goes to the connection's stream, as the SDK sends it
SESSION_SCOPED = frozenset(
    {
        M.SESSION_CANCEL,
        M.SESSION_CLOSE,
        M.SESSION_DELETE,
        M.SESSION_FORK,
        M.SESSION_PROMPT,
        M.SESSION_RESUME,
        M.SESSION_SET_CONFIG_OPTION,
        SESSION_LOAD,
        "session/set_mode",
        "session/set_model",
    }
)
"""Methods whose POST must carry Acp-Session-Id even when their params name no session."""

Route = str | None
"""Where output goes on HTTP: a session id (that session's stream) or None (the connection's stream)."""


def parse_json(text: str) -> Any:
    """JSON as JavaScript's JSON.parse reads it: NaN and Infinity are not JSON (ValueError, as for any bad text)."""
    return json.loads(text, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def is_id(value: Any) -> bool:
    """A JSON-RPC id as the SDK accepts one: null, a string, or a finite number."""
    if value is None or isinstance(value, str):
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def is_request(message: dict[str, Any]) -> bool:
    return (
        message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and "id" in message
        and (is_id(message["id"]))
    )


def is_notification(message: dict[str, Any]) -> bool:
    return message.get("jsonrpc") == "2.0" and isinstance(message.get("method"), str) and "id" not in message


def is_response(message: dict[str, Any]) -> bool:
    """A well-formed response: an id, and exactly one of result and error (an error an object with a code)."""
    if message.get("jsonrpc") != "2.0" or "method" in message or "id" not in message or not is_id(message["id"]):
        return False
    if ("result" in message) == ("error" in message):
        return False
    error = message.get("error")
    return "result" in message or (isinstance(error, dict) and isinstance(error.get("code"), int | float))


def is_response_shaped(message: dict[str, Any]) -> bool:
    """What looks like a response, well-formed or not (the SDK drops these before a WebSocket's initialize)."""
    return "method" not in message and ("id" in message or "result" in message or "error" in message)


def is_initialize(message: dict[str, Any]) -> bool:
    return message.get("jsonrpc") == "2.0" and "id" in message and message.get("method") == M.INITIALIZE


def id_key(value: Any) -> str | None:
    """One key per JSON-RPC id, as the SDK keys its routes ("1" and 1 differ), or None for no usable id."""
    if isinstance(value, str):
        return f"string:{value}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"number:{json.dumps(value)}" if math.isfinite(value) else None
    if value is None:
        return "null"
    return None


def params_session(params: Any) -> str | None:
    """The session a message's params name (`sessionId`, a string), or None."""
    if isinstance(params, dict):
        session = params.get("sessionId")
        return session if isinstance(session, str) else None
    return None


def result_session(message: dict[str, Any]) -> str | None:
    """The session a successful response's result names (session/new, session/fork), or None."""
    if not is_response(message) or "result" not in message:
        return None
    return params_session(message["result"])


ABSENT: Any = object()
"""No `data` at all (JavaScript's undefined), as opposed to `"data": null`."""


def protocol_error(code: Code, message: str, data: Any = ABSENT) -> dict[str, Any]:
    """An error response with id null, as the SDK writes one for a message it cannot answer by id."""
    error: dict[str, Any] = {"code": int(code), "message": message}
    if data is not ABSENT:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": None, "error": error}


BATCH_REFUSED = protocol_error(Code.INVALID_REQUEST, "Invalid request: JSON-RPC batches are not supported")


def encode(message: Any) -> str:
    """A message's JSON text, as JavaScript's JSON.stringify writes it (no spaces, no ASCII escaping)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
