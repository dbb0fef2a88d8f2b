"""Run inside a Python SDK toolchain's interpreter: which classes a generated schema module picks for messages.

    python classify.py MODULE PATH < REQUEST.json > ANSWER.json

MODULE is imported with PATH first on sys.path (`acp.schema` with the laid-out `src`, or a bare module). REQUEST is
{"envelopes": [NAME, ...], "messages": [VALUE, ...]}; ANSWER is [[VERDICT per envelope] per message], VERDICT being
null when the module has no class of that name, false when the class refuses the message, else the classes the
parse picked: the envelope's class, then in parentheses those of its params, result and error, each followed the
same way (a root model by what it holds). It imports pydantic only, so it runs in any toolchain that has it; it
is a script, not part of the test package (that interpreter cannot import the tests).
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

from pydantic import BaseModel, RootModel, ValidationError

# The members of an envelope whose class says which method's shape the parse chose.
PAYLOAD = ("params", "result", "error")


def picked(value: Any) -> str:
    """The classes a parsed value holds, down through root models and envelope payloads."""
    while isinstance(value, RootModel):
        value = value.root
    if not isinstance(value, BaseModel):
        return type(value).__name__
    inner = [f"{name}={picked(getattr(value, name))}" for name in PAYLOAD if getattr(value, name, None) is not None]
    return type(value).__name__ + (f"({', '.join(inner)})" if inner else "")


def verdict(cls: Any, message: Any) -> str | bool | None:
    if cls is None:
        return None
    try:
        return picked(cls.model_validate(message))
    except ValidationError:
        return False


def main() -> None:
    module_name, path = sys.argv[1], sys.argv[2]
    sys.path.insert(0, path)
    module = importlib.import_module(module_name)
    request = json.load(sys.stdin)
    classes = [getattr(module, name, None) for name in request["envelopes"]]
    answer = [[verdict(cls, message) for cls in classes] for message in request["messages"]]
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
