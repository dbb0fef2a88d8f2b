"""An Agent that answers `initialize` and `session/new` properly and then misbehaves in one chosen way, so that
the conformance runner's handling of bad Agents can be tested: `python misbehaving_agent.py MODE`. It offers every
hook in the conformance handshake, so that no trace is skipped."""

from __future__ import annotations

import json
import sys

from acp_v2_runtime.conformance import handshake_key, load_traces

MODES = {
    # mode: what the Agent writes in place of its answer to the first session/prompt
    "error-string": lambda rid: [{"jsonrpc": "2.0", "id": rid, "error": "boom"}],
    "error-array": lambda rid: [{"jsonrpc": "2.0", "id": rid, "error": [1]}],
    "error-without-code": lambda rid: [{"jsonrpc": "2.0", "id": rid, "error": {"message": "no code"}}],
    "result-and-error": lambda rid: [{"jsonrpc": "2.0", "id": rid, "result": {}, "error": {"code": 1, "message": "x"}}],
    "result-array": lambda rid: [{"jsonrpc": "2.0", "id": rid, "result": [1]}],
    "update-array-params": lambda rid: [{"jsonrpc": "2.0", "method": "session/update", "params": [1]}],
    "update-string-params": lambda rid: [{"jsonrpc": "2.0", "method": "session/update", "params": "x"}],
    "update-without-update": lambda rid: [{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s"}}],
    "unhashable-id": lambda rid: [{"jsonrpc": "2.0", "id": [rid], "result": {"messageId": "m"}}],
    "wrong-version": lambda rid: [{"jsonrpc": "1.0", "id": rid, "result": {"messageId": "m"}}],
    "non-json": lambda rid: ["this is not JSON"],
    "answer-twice": lambda rid: [{"jsonrpc": "2.0", "id": rid, "result": {"messageId": f"m{n}"}} for n in (1, 2)],
    "answer-unknown-id": lambda rid: [{"jsonrpc": "2.0", "id": "never-sent", "result": {"messageId": "m"}}],
    # a result needs the id of the request it answers; null is for an error to a request that could not be read
    "result-null-id": lambda rid: [{"jsonrpc": "2.0", "id": None, "result": {"messageId": "m"}}],
    "huge-line": lambda rid: [{"jsonrpc": "2.0", "method": "_x/pad", "params": {"pad": "x" * (17 * 1024 * 1024)}}],
}


def write(item: object) -> None:
    text = item if isinstance(item, str) else json.dumps(item)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    for line in sys.stdin:
        message = json.loads(line)
        rid, method = message.get("id"), message.get("method")
        if method == "initialize":
            info = {"name": "misbehaving", "version": "0"}
            names = [name for name, need in load_traces()["needs"].items() if need["from"] == "handshake"]
            offers = {handshake_key(): {"offers": names}}
            write({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "info": info, "_meta": offers}})
        elif method == "session/new":
            write({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "sess_1"}})
        elif method == "session/prompt":
            for item in MODES[mode](rid):
                write(item)
        elif rid is not None:
            write({"jsonrpc": "2.0", "id": rid, "result": {}})


if __name__ == "__main__":
    main()
