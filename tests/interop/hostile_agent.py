"""An Agent that behaves until its first `session/prompt`, then turns hostile in one chosen way:
`python hostile_agent.py MODE`. Until then it answers like a correct Agent (and offers every hook), so that what
the runner sees is the hostility and nothing else.

Modes: `garbage` (bytes that are not JSON), `silence` (never answers, keeps reading), `huge-line` (one line far
over the runner's limit), `exit` (exits with status 3 in the middle of the trace), `stderr-flood` (300 MB on
stderr, then exits with status 4), `escaped-key` (answers properly but echoes the key in a user_message update,
spelled as \\uXXXX escapes), `other-message-id` (a new messageId for every attempt, whatever the key),
`update-flood` (twenty thousand valid session/update notifications, and no answer).
"""

from __future__ import annotations

import json
import os
import sys
import uuid

from acp_v2_runtime.conformance import handshake_key, load_traces

FLOOD_BYTES = 300 * 1024 * 1024
SEEN: dict[object, str] = {}  # key -> messageId, for the escaped-key mode
OFFERS = [name for name, need in load_traces()["needs"].items() if need["from"] == "handshake"]
HANDSHAKE = {handshake_key(): {"offers": OFFERS}}  # everything, so that no trace is skipped


def write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def send(message: dict) -> None:
    write(json.dumps({"jsonrpc": "2.0", **message}))


def escaped(text: str) -> str:
    """A JSON string literal of `text` with every character written as a \\uXXXX escape."""
    return '"' + "".join(f"\\u{ord(c):04x}" for c in text) + '"'


def turn(session_id: object) -> None:
    """The foreground work of a prompt, as a correct Agent reports it: running, then idle."""
    for state in ("running", "idle"):
        update = {"sessionUpdate": "state_update", "state": state}
        send({"method": "session/update", "params": {"sessionId": session_id, "update": update}})


def on_prompt(mode: str, rid: object, params: dict) -> None:
    session_id = params.get("sessionId")
    if mode == "garbage":
        sys.stdout.buffer.write(b"\x00\xff}{ this is not JSON \x80\n")
        sys.stdout.flush()
    elif mode == "silence":
        pass
    elif mode == "huge-line":
        write('{"jsonrpc":"2.0","method":"_x/pad","params":{"pad":"' + "x" * (17 * 1024 * 1024) + '"}}')
    elif mode == "exit":
        print("hostile: exiting in the middle of the trace", file=sys.stderr, flush=True)
        os._exit(3)
    elif mode == "stderr-flood":
        block = (b"flood " * 20 + b"\n") * 8192  # about 1 MiB
        written = 0
        while written < FLOOD_BYTES:
            os.write(2, block)
            written += len(block)
        os.write(2, b"hostile: flooded stderr\n")
        os._exit(4)
    elif mode == "escaped-key":
        key = params.get("idempotencyKey")
        if key in SEEN:  # retries are honoured: the echo is the only thing wrong
            send({"id": rid, "result": {"messageId": SEEN[key]}})
            return
        message_id = SEEN.setdefault(key, f"msg_{uuid.uuid4().hex}")
        text = escaped(key if isinstance(key, str) else "")  # the same string once parsed, other bytes on the wire
        write(
            '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":' + json.dumps(session_id) + ","
            '"update":{"sessionUpdate":"user_message","messageId":"' + message_id + '",'
            '"content":[{"type":"text","text":' + text + "}]}}}"
        )
        send({"id": rid, "result": {"messageId": message_id}})
        turn(session_id)
    elif mode == "update-flood":
        line = json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": session_id, "update": {"sessionUpdate": "state_update", "state": "running"}},
            }
        )
        sys.stdout.write((line + "\n") * 20_000)
        sys.stdout.flush()
    elif mode == "other-message-id":
        message_id = f"msg_{uuid.uuid4().hex}"
        user = {"sessionUpdate": "user_message", "messageId": message_id, "content": params.get("prompt")}
        send({"method": "session/update", "params": {"sessionId": session_id, "update": user}})
        send({"id": rid, "result": {"messageId": message_id}})
        turn(session_id)


def main() -> None:
    mode = sys.argv[1]
    for line in sys.stdin:
        message = json.loads(line)
        rid, method, params = message.get("id"), message.get("method"), message.get("params") or {}
        if method == "initialize":
            info = {"name": "hostile", "version": "0"}
            send({"id": rid, "result": {"protocolVersion": 2, "info": info, "_meta": HANDSHAKE}})
        elif method == "session/new":
            send({"id": rid, "result": {"sessionId": f"sess_{uuid.uuid4().hex}"}})
        elif method == "session/prompt":
            on_prompt(mode, rid, params)
        elif rid is not None:
            send({"id": rid, "result": {}})


if __name__ == "__main__":
    main()
