"""A small asyncio ACP Agent of one's own, with idempotency keys added by the key ledger.

    python keyed_agent.py --db agent.db                            # SQLite: one file
    python keyed_agent.py --db postgresql://user:pw@host/dbname    # PostgreSQL: several Agents on one database

It speaks newline-delimited JSON-RPC on stdin and stdout, keeps sessions and messages in the database, replays
them on `session/resume`, and offers two conformance test hooks (holding and failing an insert). The lines that
the keys add are marked `# key`: the rest is what the Agent had before. Its test runs the conformance kit on it:

    python -m acp_v2_runtime.conformance -- python keyed_agent.py --db '{tmp}/agent.db'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from typing import Any

from acp_v2_runtime.conformance import handshake_key  # the test hooks' `_meta` key
from acp_v2_runtime.idempotency import KeyLedger, LedgerError, SQLiteStore  # key

HOOKS = handshake_key()
# The test hooks the conformance kit may use beyond the protocol. Stored sessions are not offered: the kit finds them
# by protocol (a new process that resumes the session), as the testing page says.
OFFERS = ["holdInsert", "failInsert"]
TABLES = (
    "CREATE TABLE IF NOT EXISTS ex_sessions (session_id TEXT PRIMARY KEY, cwd TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ex_messages (session_id TEXT NOT NULL, position INTEGER NOT NULL, "
    "message_id TEXT NOT NULL, content TEXT NOT NULL)",
)


class Agent:
    def __init__(self, db: str) -> None:
        postgres = db.startswith(("postgresql://", "postgres://"))
        self.ph = "%s" if postgres else "?"  # the driver's parameter placeholder
        if postgres:  # key
            from acp_v2_runtime.idempotency import PostgresStore  # key

            self.store = PostgresStore(db, setup=create_tables)  # key
        else:  # key
            self.store = SQLiteStore(db, setup=create_tables)  # key
        self.ledger = KeyLedger(self.store)  # key
        self.releases: dict[str, asyncio.Event] = {}

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": "session/update", "params": {"sessionId": session_id, "update": update}})

    async def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        return await asyncio.to_thread(lambda: self.store.connection().execute(sql, args).fetchall())

    async def execute(self, sql: str, args: tuple[Any, ...]) -> None:
        def run() -> None:
            with self.store.transaction() as conn:
                conn.execute(sql, args)

        await asyncio.to_thread(run)

    async def request(self, rid: Any, method: str, params: dict[str, Any], release: asyncio.Event) -> None:
        try:
            if method == "initialize":
                result: dict[str, Any] = {"protocolVersion": 2, "info": {"name": "example", "version": "1"}}
                result["_meta"] = {HOOKS: {"offers": OFFERS}}
            elif method == "session/new":
                session_id = f"sess_{uuid.uuid4().hex}"
                await self.execute(
                    f"INSERT INTO ex_sessions VALUES ({self.ph}, {self.ph})", (session_id, params["cwd"])
                )
                result = {"sessionId": session_id}
            elif method == "session/list":
                rows = await self.query("SELECT session_id, cwd FROM ex_sessions ORDER BY session_id")
                result = {"sessions": [{"sessionId": sid, "cwd": cwd} for sid, cwd in rows]}
            elif method == "session/resume":
                result = await self.resume(params)
            elif method == "session/prompt":
                result = await self.prompt(rid, params, release)
            else:
                self.send({"id": rid, "error": {"code": -32601, "message": f"Method not found: {method[:100]}"}})
                return
        except LedgerError as error:  # key
            self.send({"id": rid, "error": error.to_error()})  # key: -32602 for a bad key, -32800 when cancelled
            return
        except Exception as error:
            self.send({"id": rid, "error": {"code": -32603, "message": f"Internal error ({type(error).__name__})"}})
            return
        self.send({"id": rid, "result": result})

    async def resume(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params["sessionId"]
        if not await self.query(f"SELECT 1 FROM ex_sessions WHERE session_id = {self.ph}", (session_id,)):
            raise LookupError("no such session")
        if (params.get("replayFrom") or {}).get("type") == "start":
            sql = f"SELECT message_id, content FROM ex_messages WHERE session_id = {self.ph} ORDER BY position"
            for message_id, content in await self.query(sql, (session_id,)):
                replayed = {"sessionUpdate": "user_message", "messageId": message_id, "content": json.loads(content)}
                self.update(session_id, replayed)
        return {}

    async def prompt(self, rid: Any, params: dict[str, Any], release: asyncio.Event) -> dict[str, Any]:
        session_id, prompt = params["sessionId"], params["prompt"]
        hooks = (params.get("_meta") or {}).get(HOOKS) or {}

        async def hook() -> None:  # `prepare`: no arguments, runs while the key's claim is held, cancellable
            if hooks.get("failInsert"):
                raise RuntimeError("a pre-insertion hook failed")
            if hooks.get("holdInsert"):
                # The release may have come already, before this task got here: `release` is the latch taken when
                # the request was read, and a set Event stays set, so a hold that starts after it returns at once
                # rather than waiting for a release that will not come again.
                await release.wait()

        def insert(conn: Any, message_id: str) -> None:  # key: run in the ledger's transaction, on its connection
            position = f"(SELECT count(*) FROM ex_messages WHERE session_id = {self.ph})"
            sql = f"INSERT INTO ex_messages VALUES ({self.ph}, {position}, {self.ph}, {self.ph})"
            conn.execute(sql, (session_id, session_id, message_id, json.dumps(prompt)))

        key = params.get("idempotencyKey")  # key: omitted or null means none, and submit just inserts
        # The attempt (`rid`, the JSON-RPC id) must be unique among the ledger's attempts in flight; this Agent
        # has one connection, so its ids are; an Agent with several passes (connection, id).
        message_id = await self.ledger.submit(session_id, key, rid, prompt=prompt, prepare=hook, write=insert)  # key
        if message_id.inserted:  # key: a retry, or an attempt that joined another, starts nothing new
            self.update(session_id, {"sessionUpdate": "user_message", "messageId": message_id, "content": prompt})
            # Its turn does no work, but the lifecycle still has it start and end (a Client waits for idle).
            self.update(session_id, {"sessionUpdate": "state_update", "state": "running"})
            self.update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
        return {"messageId": message_id}

    def notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "$/cancel_request":
            self.ledger.cancel(params.get("requestId"))  # key: every attempt with that key gets -32800
        elif method == "session/cancel":
            self.ledger.cancel_session(params.get("sessionId"))  # key
        elif method == "_conformance/release":
            # Sets the latch of every prompt of the session read so far, held yet or not (one not yet at its hook
            # finds it set), and drops it, so that a prompt read after this release is held again.
            self.releases.pop(str(params.get("sessionId")), asyncio.Event()).set()

    async def serve(self) -> None:
        reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        tasks = set()
        while line := await reader.readline():
            message = json.loads(line)
            params = message.get("params") or {}
            if "id" in message and "method" in message:
                # The hold latch is taken as the request is read, so that a release read after it applies to it.
                release = self.releases.setdefault(str(params.get("sessionId")), asyncio.Event())
                task = asyncio.create_task(self.request(message["id"], message["method"], params, release))
                tasks.add(task)  # one task per request, started at once: an early cancel is the ledger's to answer
                task.add_done_callback(tasks.discard)
            elif "method" in message:
                # After the tasks of the requests read before it have started (so they have called `submit`): a
                # cancel read right behind its prompt then finds it, and every other attempt with its key.
                loop.call_soon(self.notification, message["method"], params)  # key


def create_tables(conn: Any) -> None:
    for statement in TABLES:
        conn.execute(statement)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a SQLite file or a postgresql:// URL")
    asyncio.run(Agent(parser.parse_args().db).serve())


if __name__ == "__main__":
    main()
