// A keyed ACP v2 Agent on the TypeScript SDK's AgentApp, served over the remote transport by the SDK's own
// AcpServer (its Node adapters: Streamable HTTP on every request, WebSocket on the upgrade, one endpoint), so
// that our Client can be checked against the SDK's server.
//
//     node sdk_server.js [--port N] [--journal FILE]       prints `listening <port>` once it accepts connections
//
// Every connection gets the same app; what the Agent keeps (sessions, messages, keys) lives in this process for
// all of them, so a prompt resent on a new connection after `session/resume` finds the key its first attempt
// recorded. A key is recorded with the message it inserted and answers every later attempt with that message's
// id; a second attempt while the first is being inserted joins it. session/prompt goes through the raw "*"
// fallback because the SDK's parser for PromptRequest drops `idempotencyKey`; the params are checked with the
// SDK's own PromptRequest validator and the key is read from them as they came.
//
// --journal FILE appends every message stored (with its key) to FILE as a JSON line, written before it is reported,
// so that the bench's comparison with our reference Agent (SQLite, WAL, kept through a process crash but not
// synced to disk on each commit) has the SDK's Agent write each message to a file too.

import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { WebSocketServer } from "ws";
import { agent, PROTOCOL_VERSION, RequestError, type AgentContext, type ContentBlock, type SessionUpdate } from "@agentclientprotocol/sdk/experimental/v2";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";

type Parser = { safeParse(value: unknown): { success: boolean; error?: unknown } };
const zodUrl = new URL("../schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk/experimental/v2"));
const validators = (await import(zodUrl.href)) as Record<string, Parser>;
const promptRequest = validators["zPromptRequest"]!;

const portAt = process.argv.indexOf("--port");
const port = portAt >= 0 ? Number(process.argv[portAt + 1]) : 0;
const journalAt = process.argv.indexOf("--journal");
const journal = journalAt >= 0 ? process.argv[journalAt + 1] : undefined;

function kept(sessionId: string, message: Message, key: string | null = null): void {
    if (journal !== undefined) appendFileSync(journal, JSON.stringify({ sessionId, key, ...message }) + "\n");
}

// -- what the Agent keeps, shared by every connection ----------------------------------------------------------

type Message = { role: "user" | "agent"; messageId: string; content: ContentBlock[] };
type Session = { cwd: string; updatedAt: string; messages: Message[]; keys: Map<string, { messageId: string; prompt: string }> };
const sessions = new Map<string, Session>();
// Keyed prompts being inserted: an attempt with the same key waits for the first one's messageId.
const inserting = new Map<string, { prompt: string; done: Promise<string> }>();

function sessionOf(sessionId: string): Session {
    const session = sessions.get(sessionId);
    if (session === undefined) throw RequestError.resourceNotFound(sessionId);
    return session;
}

// The spec's key rules: 1 to 255 code points, no lone surrogate; omitted or null means no key.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
function keyOf(params: Record<string, unknown>): string | null {
    const key = params["idempotencyKey"];
    if (key === undefined || key === null) return null;
    const length = typeof key === "string" ? [...key].length : -1;
    if (typeof key !== "string" || length < 1 || length > 255 || LONE_SURROGATE.test(key)) {
        throw RequestError.invalidParams({ field: "idempotencyKey" }, "the key is not a string of 1 to 255 code points");
    }
    return key;
}

// -- the Agent ------------------------------------------------------------------------------------------------

const app = agent({ name: "keyed-sdk-remote-agent" });

app.onRequest("initialize", () => ({
    protocolVersion: PROTOCOL_VERSION,
    info: { name: "keyed-sdk-remote-agent", version: "0.0.0" },
    capabilities: { session: {} },
}));

app.onRequest("session/new", ({ params }) => {
    const sessionId = `sess_${crypto.randomUUID()}`;
    sessions.set(sessionId, { cwd: params.cwd, updatedAt: new Date().toISOString(), messages: [], keys: new Map() });
    return { sessionId };
});

app.onRequest("session/resume", async ({ params, client }) => {
    const session = sessionOf(params.sessionId);
    const replay = params.replayFrom;
    if (replay !== null && replay !== undefined && replay.type !== "start") {
        throw RequestError.invalidParams({ replayFrom: replay.type }, "this Agent replays only from the start");
    }
    if (replay?.type === "start") {
        for (const { role, messageId, content } of session.messages) {
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

app.onRequest("session/list", () => ({
    sessions: [...sessions].map(([sessionId, s]) => ({ sessionId, cwd: s.cwd, updatedAt: s.updatedAt })),
}));

app.onRequest("session/close", () => ({}));

app.onRequest("*", async ({ method, params, client }) => {
    if (method !== "session/prompt") throw RequestError.methodNotFound(method);
    const checked = promptRequest.safeParse(params);
    if (!checked.success) throw RequestError.invalidParams(undefined, String(checked.error).slice(0, 300));
    const raw = params as Record<string, unknown> & { sessionId: string; prompt: ContentBlock[] };
    const key = keyOf(raw);
    const session = sessionOf(raw.sessionId);
    const prompt = JSON.stringify(raw.prompt);
    if (key !== null) {
        const known = session.keys.get(key) ?? inserting.get(`${raw.sessionId}\n${key}`);
        if (known !== undefined) {
            if (known.prompt !== prompt) throw RequestError.invalidParams(undefined, "the key was used for another prompt");
            return { messageId: "messageId" in known ? known.messageId : await known.done };
        }
    }
    const done = insert(client, raw.sessionId, session, raw.prompt, key, prompt);
    if (key !== null) {
        const slot = `${raw.sessionId}\n${key}`;
        inserting.set(slot, { prompt, done });
        void done.finally(() => inserting.delete(slot));
    }
    return { messageId: await done };
});

async function insert(
    client: AgentContext,
    sessionId: string,
    session: Session,
    content: ContentBlock[],
    key: string | null,
    prompt: string,
): Promise<string> {
    const messageId = `msg_${crypto.randomUUID()}`;
    session.messages.push({ role: "user", messageId, content });
    kept(sessionId, { role: "user", messageId, content }, key);
    if (key !== null) session.keys.set(key, { messageId, prompt });
    session.updatedAt = new Date().toISOString();
    await client.notify("session/update", { sessionId, update: { sessionUpdate: "user_message", messageId, content } });
    void work(client, sessionId, session);
    return messageId;
}

// The turn's work: one agent message, then idle. A connection gone meanwhile loses only these updates.
async function work(client: AgentContext, sessionId: string, session: Session): Promise<void> {
    const messageId = `msg_agent_${crypto.randomUUID()}`;
    const content: ContentBlock[] = [{ type: "text", text: "Done." }];
    session.messages.push({ role: "agent", messageId, content });
    kept(sessionId, { role: "agent", messageId, content });
    try {
        await client.notify("session/update", { sessionId, update: { sessionUpdate: "state_update", state: "running" } });
        await client.notify("session/update", { sessionId, update: { sessionUpdate: "agent_message", messageId, content } });
        await client.notify("session/update", {
            sessionId,
            update: { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" },
        });
    } catch {
        // The Client left; the message is kept and replayed on resume.
    }
}

// -- the transport --------------------------------------------------------------------------------------------

const acp = new AcpServer({ agent: app });
const server = createServer(createNodeHttpHandler(acp));
server.on("upgrade", createNodeWebSocketUpgradeHandler(acp, new WebSocketServer({ noServer: true })));
server.listen(port, "127.0.0.1", () => {
    const address = server.address();
    console.log(`listening ${typeof address === "object" && address !== null ? address.port : port}`);
});
const stop = () => {
    void acp.close().finally(() => server.close(() => process.exit(0)));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
