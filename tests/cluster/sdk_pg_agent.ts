// A keyed ACP v2 Agent on the TypeScript SDK's AgentApp, served over the remote transport by the SDK's own AcpServer
// (HTTP and WebSocket on one endpoint), that keeps its sessions, messages and idempotency-key records in PostgreSQL,
// so that several processes of it behind a balancer are one Agent: a prompt resent to another node finds the key
// its first attempt recorded, and a session resumed on any node replays what every node stored.
//
//     node sdk_pg_agent.js --db URL [--host H] [--port N] [--test-hooks] [--memory-keys]
//
// It prints `listening <port>` once its tables exist and it accepts connections. --db is a postgresql:// URL, given
// to pg as its connectionString: an `options=-c search_path=...` parameter in it reaches the server, so every node
// given one URL works in one schema. The tables are made at start (under an advisory lock, as several nodes may
// start at once).
//
// The key rule lives in one transaction: the key record (UNIQUE per session and key) is inserted first, then the
// user message, then COMMIT, and only then is the message reported and answered. A second attempt with the key,
// on any node, that meets the record still uncommitted waits in PostgreSQL for the first transaction: committed,
// the second inserts nothing and answers the recorded messageId (or -32602 when its prompt differs); rolled back
// (its node was killed mid-insert, so the server dropped the transaction with the socket), the second inserts. A
// COMMIT whose outcome the client did not hear is settled by reading the message back, never by an error answer.
//
// session/prompt goes through the raw "*" fallback, as in tests/interop/remote/sdk_server.ts: the SDK's parser for
// PromptRequest drops `idempotencyKey`, so the params are checked with the SDK's own PromptRequest validator and
// the key is read from them as they came. $/cancel_request is not honoured: a prompt is answered with what became
// of it, since a withdrawal cannot reach an attempt of the same key waiting on another node.
//
// --test-hooks offers the conformance kit's holdInsert and failInsert hooks under the handshake's `_meta` key (read
// from ACP_CONFORMANCE_META_KEY). A hold belongs to one connection and session: the prompt waits, holding no
// database connection, until `_conformance/release` for its session arrives on its connection. --memory-keys is a
// deliberate bug for the tests: key records kept in this process's memory only, which another node cannot see.

import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import pg from "pg";
import { WebSocketServer } from "ws";
import { agent, PROTOCOL_VERSION, RequestError, type AgentContext, type ContentBlock, type SessionUpdate } from "@agentclientprotocol/sdk/experimental/v2";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";

const entry = import.meta.resolve("@agentclientprotocol/sdk/experimental/v2");
type Parser = { safeParse(value: unknown): { success: boolean; error?: unknown } };
// The SDK's generated zod validators are not in its package exports; they sit beside its v2 entry point.
const validators = (await import(new URL("../schema/zod.gen.js", entry).href)) as Record<string, Parser>;
const promptRequest = validators["zPromptRequest"]!;
// A handler's context is made per request; the connection behind it is what a hold and an open session belong to.
// The SDK reaches it with a hidden helper of its own, which sits beside the v2 entry point too.
type Connection = { readonly signal: AbortSignal };
const { connectionOf } = (await import(new URL("../../core/connection-access.js", entry).href)) as {
    connectionOf(context: AgentContext): Connection;
};

// -- options -------------------------------------------------------------------------------------------------

function option(name: string): string | undefined {
    const at = process.argv.indexOf(name);
    return at >= 0 ? process.argv[at + 1] : undefined;
}
const host = option("--host") ?? "127.0.0.1";
const port = Number(option("--port") ?? "0");
const dbUrl = option("--db");
if (dbUrl === undefined) {
    console.error("sdk_pg_agent: --db postgresql://... is required");
    process.exit(2);
}
const testHooks = process.argv.includes("--test-hooks");
const memoryKeys = process.argv.includes("--memory-keys");
const HANDSHAKE_KEY = process.env["ACP_CONFORMANCE_META_KEY"];
if (testHooks && HANDSHAKE_KEY === undefined) {
    console.error("sdk_pg_agent: --test-hooks needs ACP_CONFORMANCE_META_KEY, the handshake's _meta key");
    process.exit(2);
}
const HOOKS = ["holdInsert", "failInsert"];
const RELEASE = "_conformance/release";

// -- the store -----------------------------------------------------------------------------------------------

const pool = new pg.Pool({ connectionString: dbUrl, max: 16 });
pool.on("error", () => {}); // an idle client the server dropped: the pool replaces it on the next query

// Keys and contents are stored as their JSON text: exact (no normalisation of case, space or Unicode), and a NUL,
// which a PostgreSQL text value cannot hold, is escaped.
const SCHEMA = `
    CREATE TABLE IF NOT EXISTS sdk_agent_sessions (
        session_id text PRIMARY KEY,
        cwd text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE IF NOT EXISTS sdk_agent_messages (
        seq bigserial PRIMARY KEY,
        session_id text NOT NULL REFERENCES sdk_agent_sessions,
        message_id text NOT NULL UNIQUE,
        role text NOT NULL CHECK (role IN ('user', 'agent')),
        content text NOT NULL
    );
    CREATE INDEX IF NOT EXISTS sdk_agent_messages_by_session ON sdk_agent_messages (session_id, seq);
    CREATE TABLE IF NOT EXISTS sdk_agent_keys (
        session_id text NOT NULL,
        key text NOT NULL,
        prompt text NOT NULL,
        message_id text NOT NULL REFERENCES sdk_agent_messages (message_id) DEFERRABLE INITIALLY DEFERRED,
        PRIMARY KEY (session_id, key)
    );`;

async function createTables(): Promise<void> {
    const db = await pool.connect();
    try {
        await db.query("BEGIN");
        await db.query("SELECT pg_advisory_xact_lock(hashtext('sdk_pg_agent schema'))");
        await db.query(SCHEMA);
        await db.query("COMMIT");
    } finally {
        db.release();
    }
}

const CLAIM_KEY = "INSERT INTO sdk_agent_keys (session_id, key, prompt, message_id) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING";
const ADD_MESSAGE = "INSERT INTO sdk_agent_messages (session_id, message_id, role, content) VALUES ($1, $2, $3, $4)";

type KeyRecord = { messageId: string; prompt: string };

async function recorded(sessionId: string, key: string): Promise<KeyRecord | undefined> {
    const found = await pool.query<{ message_id: string; prompt: string }>(
        "SELECT message_id, prompt FROM sdk_agent_keys WHERE session_id = $1 AND key = $2",
        [sessionId, JSON.stringify(key)],
    );
    const row = found.rows[0];
    return row === undefined ? undefined : { messageId: row.message_id, prompt: row.prompt };
}

async function sessionExists(sessionId: string): Promise<boolean> {
    const found = await pool.query("SELECT 1 FROM sdk_agent_sessions WHERE session_id = $1", [sessionId]);
    return (found.rowCount ?? 0) > 0;
}

// What one insertion came to: a message this process inserted, or the one the key had recorded already.
type Outcome = { inserted: true; messageId: string } | { inserted: false; record: KeyRecord };

async function insert(sessionId: string, content: ContentBlock[], key: string | null, signal: AbortSignal): Promise<Outcome> {
    const messageId = `msg_${randomUUID()}`;
    const prompt = JSON.stringify(content);
    const db = await pool.connect();
    let committing = false;
    let broken: Error | undefined;
    try {
        await db.query("BEGIN");
        if (key !== null) {
            // Waits while another transaction holds this key uncommitted, then either claims it or meets it.
            const claimed = await db.query(CLAIM_KEY, [sessionId, JSON.stringify(key), prompt, messageId]);
            if (claimed.rowCount === 0) {
                await db.query("ROLLBACK");
                const record = await recorded(sessionId, key); // committed: the INSERT waited for it
                if (record === undefined) throw new Error("the key's record vanished");
                return { inserted: false, record };
            }
        }
        await db.query(ADD_MESSAGE, [sessionId, messageId, "user", prompt]);
        await db.query("UPDATE sdk_agent_sessions SET updated_at = now() WHERE session_id = $1", [sessionId]);
        committing = true;
        await db.query("COMMIT");
        return { inserted: true, messageId };
    } catch (error) {
        broken = error instanceof Error ? error : new Error(String(error));
        if (!committing) {
            await db.query("ROLLBACK").catch(() => {});
            throw error;
        }
        // The COMMIT was sent and its answer lost: the message may be stored. An error answer would say it is not.
        if (await storedYet(messageId, signal)) return { inserted: true, messageId };
        throw error;
    } finally {
        db.release(broken);
    }
}

// Whether a message is stored, asked until the store answers (or the Client's connection is gone).
async function storedYet(messageId: string, signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
        try {
            const found = await pool.query("SELECT 1 FROM sdk_agent_messages WHERE message_id = $1", [messageId]);
            return (found.rowCount ?? 0) > 0;
        } catch {
            await new Promise((resolve) => setTimeout(resolve, 500));
        }
    }
    return false;
}

// --memory-keys: the bug. Attempts in this process join one another; another process never hears of the key.
const remembered = new Map<string, { prompt: string; messageId: Promise<string> }>();

async function insertRemembering(
    sessionId: string,
    content: ContentBlock[],
    key: string | null,
    signal: AbortSignal,
): Promise<Outcome> {
    if (key === null) return insert(sessionId, content, null, signal);
    const slot = `${sessionId}\n${key}`;
    const prompt = JSON.stringify(content);
    const known = remembered.get(slot);
    if (known !== undefined) return { inserted: false, record: { prompt: known.prompt, messageId: await known.messageId } };
    const outcome = insert(sessionId, content, null, signal);
    const messageId = outcome.then((o) => (o.inserted ? o.messageId : o.record.messageId));
    remembered.set(slot, { prompt, messageId });
    messageId.catch(() => remembered.delete(slot));
    return outcome;
}

// -- what each connection has ----------------------------------------------------------------------------------

type Latch = { release: Promise<void>; releaseNow: () => void };
type Live = { open: Set<string>; holds: Map<string, Latch> };
const connections = new WeakMap<Connection, Live>();

function liveOf(client: AgentContext): Live {
    const connection = connectionOf(client);
    let live = connections.get(connection);
    if (live === undefined) {
        live = { open: new Set(), holds: new Map() };
        connections.set(connection, live);
    }
    return live;
}

function latch(): Latch {
    let releaseNow = () => {};
    const release = new Promise<void>((resolve) => (releaseNow = resolve));
    return { release, releaseNow };
}

// The hold a prompt takes when it is read: the next release of its session on its connection ends it.
function holdOf(live: Live, sessionId: string): Promise<void> {
    let current = live.holds.get(sessionId);
    if (current === undefined) {
        current = latch();
        live.holds.set(sessionId, current);
    }
    return current.release;
}

function hooksOf(params: { [name: string]: unknown }): { [name: string]: unknown } {
    if (!testHooks) return {};
    const meta = params["_meta"];
    const hooks = meta !== null && typeof meta === "object" ? (meta as { [name: string]: unknown })[HANDSHAKE_KEY!] : null;
    return hooks !== null && typeof hooks === "object" ? (hooks as { [name: string]: unknown }) : {};
}

// The spec's key rules: 1 to 255 code points, no lone surrogate; omitted or null means no key.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
function keyOf(params: { [name: string]: unknown }): string | null {
    const key = params["idempotencyKey"];
    if (key === undefined || key === null) return null;
    const length = typeof key === "string" ? [...key].length : -1;
    if (typeof key !== "string" || length < 1 || length > 255 || LONE_SURROGATE.test(key)) {
        throw RequestError.invalidParams({ field: "idempotencyKey" }, "the key is not a string of 1 to 255 code points");
    }
    return key;
}

// A report that cannot reach the Client changes nothing stored: the answer still says what happened.
async function tell(client: AgentContext, sessionId: string, update: SessionUpdate): Promise<void> {
    try {
        await client.notify("session/update", { sessionId, update });
    } catch {
        // The Client left; what is stored is replayed on resume.
    }
}

// -- the Agent ------------------------------------------------------------------------------------------------

const app = agent({ name: "keyed-sdk-pg-agent" });

app.onRequest("initialize", ({ params }) => {
    const asked = testHooks && params._meta !== null && params._meta !== undefined && HANDSHAKE_KEY! in params._meta;
    return {
        protocolVersion: PROTOCOL_VERSION,
        info: { name: "keyed-sdk-pg-agent", version: "0.0.0" },
        capabilities: { session: {} },
        ...(asked ? { _meta: { [HANDSHAKE_KEY!]: { offers: HOOKS } } } : {}),
    };
});

app.onRequest("session/new", async ({ params, client }) => {
    const sessionId = `sess_${randomUUID()}`;
    await pool.query("INSERT INTO sdk_agent_sessions (session_id, cwd) VALUES ($1, $2)", [sessionId, params.cwd]);
    liveOf(client).open.add(sessionId);
    return { sessionId };
});

app.onRequest("session/resume", async ({ params, client }) => {
    const replay = params.replayFrom;
    if (replay !== null && replay !== undefined && replay.type !== "start") {
        throw RequestError.invalidParams({ replayFrom: replay.type }, "this Agent replays only from the start");
    }
    if (!(await sessionExists(params.sessionId))) throw RequestError.sessionNotFound(params.sessionId);
    liveOf(client).open.add(params.sessionId);
    if (replay?.type === "start") {
        const messages = await pool.query<{ role: string; message_id: string; content: string }>(
            "SELECT role, message_id, content FROM sdk_agent_messages WHERE session_id = $1 ORDER BY seq",
            [params.sessionId],
        );
        for (const { role, message_id: messageId, content: text } of messages.rows) {
            const content = JSON.parse(text) as ContentBlock[];
            const update: SessionUpdate =
                role === "user"
                    ? { sessionUpdate: "user_message", messageId, content }
                    : { sessionUpdate: "agent_message", messageId, content };
            await client.notify("session/update", { sessionId: params.sessionId, update });
        }
    }
    await client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" },
    });
    return {};
});

app.onRequest("session/list", async () => {
    const found = await pool.query<{ session_id: string; cwd: string; updated_at: Date }>(
        "SELECT session_id, cwd, updated_at FROM sdk_agent_sessions ORDER BY updated_at DESC, session_id",
    );
    return {
        sessions: found.rows.map((row) => ({ sessionId: row.session_id, cwd: row.cwd, updatedAt: row.updated_at.toISOString() })),
    };
});

app.onRequest("session/close", ({ params, client }) => {
    liveOf(client).open.delete(params.sessionId);
    return {};
});

app.onNotification("*", ({ method, params, client }) => {
    if (method !== RELEASE || !testHooks || params === null || typeof params !== "object") return;
    const sessionId = String((params as { [name: string]: unknown })["sessionId"]);
    const live = liveOf(client);
    const current = live.holds.get(sessionId);
    live.holds.delete(sessionId); // a prompt read after this release waits for the next one
    current?.releaseNow();
});

app.onRequest("*", async ({ method, params, client }) => {
    if (method !== "session/prompt") throw RequestError.methodNotFound(method);
    const checked = promptRequest.safeParse(params);
    if (!checked.success) throw RequestError.invalidParams(undefined, String(checked.error).slice(0, 300));
    const raw = params as { [name: string]: unknown } & { sessionId: string; prompt: ContentBlock[] };
    const key = keyOf(raw);
    const live = liveOf(client);
    const { signal } = connectionOf(client);
    const hooks = hooksOf(raw);
    const hold = hooks["holdInsert"] === true ? holdOf(live, raw.sessionId) : null; // taken as it is read
    if (!live.open.has(raw.sessionId)) throw RequestError.sessionNotFound(raw.sessionId);
    const prompt = JSON.stringify(raw.prompt);
    // A key recorded already answers at once, hooks or not.
    const known = key === null ? undefined : memoryKeys ? undefined : await recorded(raw.sessionId, key);
    if (known !== undefined) return answer(known, prompt);
    if (hooks["failInsert"] === true) throw RequestError.internalError(undefined, "a pre-insertion hook failed");
    if (hold !== null) {
        const gone = new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
        await Promise.race([hold, gone]);
        if (signal.aborted) throw RequestError.requestCancelled(undefined, "the connection closed while the prompt was held");
    }
    const outcome = memoryKeys
        ? await insertRemembering(raw.sessionId, raw.prompt, key, signal)
        : await insert(raw.sessionId, raw.prompt, key, signal);
    if (!outcome.inserted) return answer(outcome.record, prompt); // another attempt inserted it: no second round
    await tell(client, raw.sessionId, { sessionUpdate: "user_message", messageId: outcome.messageId, content: raw.prompt });
    void work(client, raw.sessionId);
    return { messageId: outcome.messageId };
});

function answer(record: KeyRecord, prompt: string): { messageId: string } {
    if (record.prompt !== prompt) throw RequestError.invalidParams(undefined, "the key was used for another prompt");
    return { messageId: record.messageId };
}

// The turn's work: one agent message, stored, then idle. A connection gone meanwhile loses only these updates.
async function work(client: AgentContext, sessionId: string): Promise<void> {
    await tell(client, sessionId, { sessionUpdate: "state_update", state: "running" });
    const messageId = `msg_agent_${randomUUID()}`;
    const content: ContentBlock[] = [{ type: "text", text: "Done." }];
    try {
        await pool.query(ADD_MESSAGE, [sessionId, messageId, "agent", JSON.stringify(content)]);
        await tell(client, sessionId, { sessionUpdate: "agent_message", messageId, content });
    } catch {
        // Not stored, so not reported: the turn ends without its answer.
    }
    await tell(client, sessionId, { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
}

// -- the transport --------------------------------------------------------------------------------------------

try {
    await createTables();
} catch (error) {
    console.error(`sdk_pg_agent: the store at --db cannot be prepared: ${String(error)}`);
    process.exit(1);
}
const acp = new AcpServer({ agent: app });
const server = createServer(createNodeHttpHandler(acp));
server.on("upgrade", createNodeWebSocketUpgradeHandler(acp, new WebSocketServer({ noServer: true })));
server.listen(port, host, () => {
    const address = server.address();
    console.log(`listening ${typeof address === "object" && address !== null ? address.port : port}`);
});
const stop = () => {
    void acp
        .close()
        .finally(() => pool.end().catch(() => {}))
        .finally(() => server.close(() => process.exit(0)));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
