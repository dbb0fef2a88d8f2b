"""Reading a JSON document (a published schema) strictly: every refusal is a diagnostic, never a traceback.

`json.loads` accepts `NaN` and `Infinity`, which JSON does not have, and fails with Python errors on inputs that
are valid JSON but too large for it (nesting beyond the interpreter's recursion limit, integers longer than its
digit limit). Each of those becomes one diagnostic with the line and column of the first offending token; nesting
is held to the spec files' limit, since the comparisons that follow recurse.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from ..diagnostics import Diagnostic, Location, SpecError
from .loader import MAX_DEPTH

# A string (skipped whole, so nothing inside it matches), a non-finite constant, or an integer part.
_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|(?P<constant>-?Infinity|NaN)|(?P<digits>-?\d+)')
_NESTING = re.compile(r'"(?:\\.|[^"\\])*"|(?P<open>[\[{])|(?P<close>[\]}])')


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _first(text: str, group: str, accept: Any) -> int:
    """The offset of the first token outside strings that `group` captures and `accept` takes, else 0."""
    for match in _TOKENS.finditer(text):
        token = match.group(group)
        if token is not None and accept(token):
            return match.start()
    return 0


def _too_deep(text: str, limit: int) -> int:
    depth = 0
    for match in _NESTING.finditer(text):
        if match.group("open"):
            depth += 1
            if depth > limit:
                return match.start()
        elif match.group("close"):
            depth -= 1
    return 0


class _NonFinite(ValueError):
    pass


def _refuse(token: str) -> Any:
    raise _NonFinite(token)


def read_json(data: bytes, display: str) -> Any:
    """The JSON value in `data`, or SpecError with one diagnostic (code `not-utf8`, `invalid-json` or `too-deep`)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError([Diagnostic(Location(display), "not-utf8", f"not valid UTF-8 ({exc.reason})")]) from None
    # The same nesting limit as spec files: deeper values would crash the comparison's recursion later.
    offset = _too_deep(text, MAX_DEPTH)
    if offset:
        raise _error(display, text, offset, "too-deep", f"values are nested more than {MAX_DEPTH} levels deep")
    try:
        return json.loads(text, parse_constant=_refuse)
    except json.JSONDecodeError as exc:
        where = Location(display, exc.lineno, exc.colno)
        raise SpecError([Diagnostic(where, "invalid-json", exc.msg)]) from None
    except _NonFinite as exc:
        offset = _first(text, "constant", lambda _token: True)
        message = f"{exc} is not a JSON number (JSON has no NaN or infinities)"
        raise _error(display, text, offset, "invalid-json", message) from None
    except ValueError:  # only the integer digit limit is left: every other refusal is a JSONDecodeError
        limit = sys.get_int_max_str_digits()
        offset = _first(text, "digits", lambda token: len(token.lstrip("-")) > limit)
        raise _error(display, text, offset, "invalid-json", f"an integer longer than {limit} digits") from None


def _error(display: str, text: str, offset: int, code: str, message: str) -> SpecError:
    line, column = _position(text, offset)
    return SpecError([Diagnostic(Location(display, line, column), code, message)])
