"""What one connection of the remote transport may hold, with the TypeScript SDK 2.4.0's defaults.

Each limit is named as the SDK's `ConnectionLimits` names it (in snake case) and defaults to the same value, so an
Agent served by `acp_v2_runtime.remote` and one served by the SDK's `AcpServer` refuse the same traffic. One limit
is ours alone, `max_idle_seconds` (the SDK keeps an HTTP connection until its DELETE; see its docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Per-connection limits; every one must be positive (`ValueError` otherwise)."""

    max_buffered_bytes: int = 64 * MIB
    """Output (JSON text) queued on a connection's event streams for readers that have not taken it. At this much,
    requests wait before they reach the Agent, and the output waits for a reader."""
    max_output_stall_seconds: float = 60.0
    """How long output may wait at `max_buffered_bytes` with no reader taking any before the connection is closed:
    a client that stopped reading is not coming back for it."""
    max_buffered_session_streams: int = 1024
    """Session streams holding output with no reader attached; one more closes the connection."""
    max_id_length: int = 1024
    """The longest session id or string request id a connection routes (in characters)."""
    max_request_body_bytes: int = 16 * MIB
    """The largest POST body read (the SDK's Node adapter's `maxRequestBodyBytes`); a larger one is answered 413."""
    max_idle_seconds: float = 60.0
    """HTTP only, and not the SDK's: how long a connection may have no event stream open and get no POST before it is
    ended as its DELETE would end it (its Agent closed, what it held let go). A live Client keeps its connection's
    stream open (the SDK's client and ours do), so this ends only a Client that went away without a DELETE: its
    process or its network gone. `math.inf` keeps every connection until its DELETE, as the SDK does."""

    def __post_init__(self) -> None:
        for name in ("max_buffered_bytes", "max_buffered_session_streams", "max_id_length", "max_request_body_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive whole number, not {value!r}")
        for name in ("max_output_stall_seconds", "max_idle_seconds"):
            value = getattr(self, name)
            finite = name == "max_output_stall_seconds"
            if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value <= 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
            if finite and math.isinf(value):
                raise ValueError(f"{name} must be a finite number of seconds, not {value!r}")


class LimitExceeded(Exception):
    """A connection went over one of its `Limits`; the message names the limit and its value, as the SDK's does."""


def exceeded(limits: Limits, name: str) -> LimitExceeded:
    return LimitExceeded(f"Connection exceeds {_sdk_name(name)} ({getattr(limits, name)})")


def stalled(limits: Limits) -> LimitExceeded:
    millis = round(limits.max_output_stall_seconds * 1000)
    return LimitExceeded(f"Connection output stalled for maxOutputStallMs ({millis})")


def id_too_long(limits: Limits, label: str) -> LimitExceeded:
    return LimitExceeded(f"{label} exceeds maxIdLength ({limits.max_id_length})")


def _sdk_name(name: str) -> str:
    """The SDK's camelCase name of a limit, which its error messages use."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
