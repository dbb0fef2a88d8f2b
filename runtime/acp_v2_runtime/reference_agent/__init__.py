"""A small ACP v2 Agent over stdio, built on the key ledger with an SQL store: the conformance reference.

    python -m acp_v2_runtime.reference_agent --db agent.db [--ignore-keys] [--lease SECONDS] [--offers NAMES]
    python -m acp_v2_runtime.reference_agent --db postgresql://user@host/agents ...
    python -m acp_v2_runtime.reference_agent --listen 127.0.0.1:8000 --db agent.db   # the remote transport

It speaks newline-delimited JSON-RPC on stdin/stdout and keeps sessions, messages and keys in one SQLite file or
one PostgreSQL database (`--db` a `postgresql://` URL, whose password is never shown), so a restarted process, or
any other one on the same database, sees what the first inserted: several Agents can serve one Client. It
handles `initialize`, `session/new`, `session/resume` (replays the stored messages when `replayFrom` asks, then
reports the state), `session/list`, `session/close`, `session/prompt`, `session/cancel` and `$/cancel_request`.
Work is deliberately tiny: `running`, one `agent_message`, `idle`.

Test hooks, for the conformance traces only, ride in the prompt's `_meta["acp-v2-retry/conformance"]` (the
handshake key of the traces document): `holdInsert` keeps the prompt before insertion and `holdWork` keeps the
work running, both until a `_conformance/release` notification for the session; `failInsert` rejects the
prompt before insertion (-32603). The `initialize` result offers them, and `storedSessions`, under the same key
(`"offers": [...]`), which is how the conformance runner knows it may run the traces that need them; `--offers`
names fewer (`--offers ''` none), to show the runner skipping what an Agent does not offer. `--crash-after claim`
or `--crash-after insert` kills the process with SIGKILL at that point of the first keyed prompt.
`--ignore-keys` makes it behave like an Agent that knows nothing of keys, so the runner can prove it fails.

Bad input costs one error answer, never the process. The generated `acp_v2_schema.reader.MessageReader` classifies
every line (framing is in `jsonrpc`), and each `Invalid` is answered with the code and the id it names: -32700 for a
line that is not UTF-8 JSON (or nests deeper than Python parses, or holds a number a float cannot, such as 1e999),
-32600 for anything that is not a valid Request object (a batch, refused as the TypeScript SDK refuses it, a line
over 16 MiB, `jsonrpc` other than "2.0", a non-string `method`, an id that is not a string or an integer within the
range of `RequestId`, params neither object nor array), -32601 for a method it does not handle (`HANDLERS`: this
Agent's own), and -32602 when the params do not fit the generated model the spec names for the method (a malformed
key among them), checked before any work. Those answers carry the request's id when it was valid, else null
(`answer_id`). Responses from the Client are never answered, nor are notifications. A `--db` file that exists but is
not this Agent's database (empty, corrupted, another program's) is refused at startup with one line on stderr and
exit status 2. Standard input may be of any kind (a regular file, /dev/null, closed): it is read to its end, then
the process exits. Storage never blocks the connection: a locked database is tried again for at most
LOCK_WAIT_SECONDS, a database server's call is waited for at most STORE_WAIT_SECONDS (in a worker thread), then
-32603 (a COMMIT sent by then is waited for instead: its outcome is the answer); a failed write ends the request
with -32603, or the turn with the `idle` state and stopReason `error`. A prompt the generated models read only by
salvaging (ACP's lenient rules) is acted on, stored and replayed without what they set aside.

The modules, by concern; each imports only those below it, never one above:

    cli        the command line (`__main__` runs it)
    remote     `--listen HOST:PORT`: the same Agent over ACP's remote transport (acp_v2_runtime.remote), one
               `Agent` per connection, all on one database
    transport  JSON-RPC messages in and out (stdio lines, or a connection's `send` callback), dispatch
               (`HANDLERS`), `$/cancel_request`, the end of the input or connection; `Agent` is its class
    hooks      the test hooks: holdInsert, holdWork, failInsert, the release notification, the offers, --crash-after
    turns      sessions, prompts through the key ledger, the work of a turn, session/cancel and session/close
    bounds     every call to the database in bounded time, and the bounds (LOCK_WAIT_SECONDS, STORE_WAIT_SECONDS,
               FINISH_SECONDS), read when they apply: set them there, not here
    storage    the database: an SQLite file or a PostgreSQL URL, opened, checked and made; its tables

`Agent` is one class built up the same way (transport.Agent < hooks.HookedTurns < turns.Turns < bounds.StoreCalls):
a lower layer asks the one above only through a method it declares (`send`, the hooks' points), never by an import.
"""

from .cli import _seconds, main
from .hooks import HOOKS_KEY, OFFERS, RELEASE
from .transport import HANDLERS, Agent

__all__ = ["HANDLERS", "HOOKS_KEY", "OFFERS", "RELEASE", "Agent", "_seconds", "main"]
