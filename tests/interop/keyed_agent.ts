// A small keyed ACP v2 Agent on the TypeScript SDK's AgentApp (@agentclientprotocol/sdk, ./experimental/v2),
// written the way an Agent author would, to show that the conformance kit judges such an Agent by the protocol.
//
//     node keyed_agent.js [--store FILE] [--offers NAME,...] [--claim NAME,...] [--ignore-keys] [--chunks]
//                         [--ask-permission] [--rerun-work] [--no-report]
//
// Typed handlers serve initialize, session/new, session/resume (with replay for replayFrom {type: "start"}),
// session/list, session/close and session/cancel. session/prompt is served by the raw `onRequest("*")`
// fallback: the SDK's zod parser for PromptRequest strips `idempotencyKey`, which the SDK's types do not know,
// so a typed handler would never see it. The fallback gets the params as they came; the handler checks them with
// the SDK's own PromptRequest validator and reads the key from the raw object.
//
// --store FILE keeps sessions, messages and keys in a JSON file (written before anything is reported), so another
// process resumes them: the `storedSessions` offer. --offers lists what the initialize result offers the
// conformance runner (only when its initialize asks, under the handshake key); the prompt hooks holdInsert,
// holdWork and failInsert are honoured only when offered. --ignore-keys makes it an Agent that never heard of keys.
//
// The other flags make the Agents the kit must judge right without having written them: --chunks reports each
// inserted user message as user_message_chunk updates (one per content block, each text split in two) and only
// after the answer; --ask-permission asks the Client session/request_permission in every turn before its output
// (and gives none when refused); --claim offers hooks in the handshake that it does not implement; --rerun-work
// runs the turn again when a retry of an inserted message comes, which the proposal forbids; --no-report never
// reports an inserted user message, which the prompt lifecycle requires.

import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import {
    agent,
    ndJsonStream,
    PROTOCOL_VERSION,
    RequestError,
    type AgentContext,
    type ContentBlock,
    type SessionUpdate,
} from "@agentclientprotocol/sdk/experimental/v2";

// The handshake's `_meta` key, which the tests take from the traces document (an Agent author writes it out).
const HANDSHAKE_KEY: string =
    process.env["ACP_CONFORMANCE_META_KEY"] ??
    (() => {
        throw new Error("set ACP_CONFORMANCE_META_KEY to the handshake's _meta key");
    })();
const RELEASE = "_conformance/release";

type Parser = { safeParse(value: unknown): { success: boolean; error?: unknown } };
// The SDK's generated zod validators are not in its package exports; they sit beside its v2 entry point.
const zodUrl = new URL("../schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk/experimental/v2"));
const validators = (await import(zodUrl.href)) as Record<string, Parser>;
const promptRequest = validators["zPromptRequest"]!;

// -- options -------------------------------------------------------------------------------------------------

function option(name: string): string | undefined {
    const at = process.argv.indexOf(name);
    return at >= 0 ? process.argv[at + 1] : undefined;
}
const storePath = option("--store");
const offers = (option("--offers") ?? "").split(",").filter((name) => name !== "");
const ignoreKeys = process.argv.includes("--ignore-keys");
const claims = (option("--claim") ?? "").split(",").filter((name) => name !== "");
const chunks = process.argv.includes("--chunks");
const askPermission = process.argv.includes("--ask-permission");
const rerunWork = process.argv.includes("--rerun-work");
const noReport = process.argv.includes("--no-report");

// -- what is kept --------------------------------------------------------------------------------------------

type Message = { role: "user" | "agent"; messageId: string; content: ContentBlock[] };
type StoredSession = { cwd: string; updatedAt: string; messages: Message[]; keys: Record<string, KeyRecord> };
type KeyRecord = { messageId: string; prompt: string };
const stored: Record<string, StoredSession> =
    storePath !== undefined && existsSync(storePath) ? JSON.parse(readFileSync(storePath, "utf-8")) : {};

function save(): void {
    if (storePath === undefined) return;
    writeFileSync(`${storePath}.tmp`, JSON.stringify(stored));
    renameSync(`${storePath}.tmp`, storePath); // a kill between the two leaves the previous file whole
}

// A prompt on its way to insertion: every attempt with its key waits on it (or only one, without a key).
type Pending = {
    sessionId: string;
    key: string | null;
    prompt: string;
    waiters: { resolve: (messageId: string) => void; reject: (error: unknown) => void }[];
    cancelled: boolean;
    wake: () => void;
};

// What is live on this connection: the sessions it opened, their release latch, pending prompts and work, and
// the keys withdrawn (with the line of the cancellation) for attempts whose handler had not started yet.
type Live = {
    release: Promise<void>;
    releaseNow: () => void;
    pending: Set<Pending>;
    withdrawn: { key: string; at: number }[];
    queue: boolean[]; // one entry per inserted prompt: true when its work holds until a release
    working: boolean;
    cancelWork: (() => void) | null;
};
const live = new Map<string, Live>();

function latch(): { release: Promise<void>; releaseNow: () => void } {
    let releaseNow = () => {};
    const release = new Promise<void>((resolve) => (releaseNow = resolve));
    return { release, releaseNow };
}

function open(sessionId: string): Live {
    let session = live.get(sessionId);
    if (session === undefined) {
        session = { ...latch(), pending: new Set(), withdrawn: [], queue: [], working: false, cancelWork: null };
        live.set(sessionId, session);
    }
    return session;
}

function hooksOf(params: Record<string, unknown>): Record<string, unknown> {
    const meta = params["_meta"];
    const hooks = meta !== null && typeof meta === "object" ? (meta as Record<string, unknown>)[HANDSHAKE_KEY] : null;
    if (hooks === null || typeof hooks !== "object") return {};
    return Object.fromEntries(Object.entries(hooks).filter(([name]) => offers.includes(name)));
}

// The key rules of the spec: a string of 1 to 255 code points, with no lone surrogate. null or omitted: no key.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
function keyOf(params: Record<string, unknown>): string | null {
    const key = params["idempotencyKey"];
    if (ignoreKeys || key === undefined || key === null) return null;
    if (typeof key !== "string") throw RequestError.invalidParams({ field: "idempotencyKey" }, "the key is not a string");
    const length = [...key].length;
    if (length < 1 || length > 255 || LONE_SURROGATE.test(key)) {
        throw RequestError.invalidParams({ field: "idempotencyKey" }, "the key is not 1 to 255 code points");
    }
    return key;
}

// -- arrival order -------------------------------------------------------------------------------------------
//
// The SDK may run a request's handler after it has processed later lines: a `$/cancel_request` right behind two
// attempts with one key aborts the first before either handler starts. Both attempts were pending when the
// cancel came, so both get -32800. To know that, the input is tapped on its way to the SDK: each line's number,
// and where each cancellation came.

let lineNumber = 0;
const arrivedAt = new Map<string, number>(); // JSON of a request id -> the line it came on
const cancelledAt = new Map<string, number>(); // JSON of a request id -> the line of its $/cancel_request
const sessionCancelledAt = new Map<string, number>(); // session id -> the line of its latest session/cancel

function tap(): TransformStream<Uint8Array, Uint8Array> {
    let pending = "";
    const decoder = new TextDecoder();
    return new TransformStream({
        transform(chunk, controller) {
            pending += decoder.decode(chunk, { stream: true });
            let end: number;
            while ((end = pending.indexOf("\n")) >= 0) {
                note(pending.slice(0, end));
                pending = pending.slice(end + 1);
            }
            controller.enqueue(chunk);
        },
    });
}

function note(line: string): void {
    lineNumber += 1;
    let message: { id?: unknown; method?: unknown; params?: Record<string, unknown> };
    try {
        message = JSON.parse(line);
    } catch {
        return; // the SDK answers it
    }
    if (message === null || typeof message !== "object") return;
    if ("id" in message && typeof message.method === "string") arrivedAt.set(JSON.stringify(message.id), lineNumber);
    if (message.method === "$/cancel_request") cancelledAt.set(JSON.stringify(message.params?.["requestId"]), lineNumber);
    if (message.method === "session/cancel") sessionCancelledAt.set(String(message.params?.["sessionId"]), lineNumber);
}

// -- the connection ------------------------------------------------------------------------------------------

// Handlers are registered first: a connection takes the handlers the app has when it connects.
const app = agent({ name: "keyed-sdk-agent" });
let client: AgentContext | null = null;

function notify(sessionId: string, update: SessionUpdate): Promise<void> {
    return client!.notify("session/update", { sessionId, update });
}

app.onRequest("initialize", ({ params }) => {
    const asked = params._meta !== null && params._meta !== undefined && HANDSHAKE_KEY in params._meta;
    return {
        protocolVersion: PROTOCOL_VERSION,
        info: { name: "keyed-sdk-agent", version: "0.0.0" },
        capabilities: { session: {} },
        ...(asked && offers.length + claims.length > 0 ? { _meta: { [HANDSHAKE_KEY]: { offers: [...offers, ...claims] } } } : {}),
    };
});

app.onRequest("session/new", ({ params }) => {
    const sessionId = `sess_${crypto.randomUUID()}`;
    stored[sessionId] = { cwd: params.cwd, updatedAt: new Date().toISOString(), messages: [], keys: {} };
    save();
    open(sessionId);
    return { sessionId };
});

app.onRequest("session/resume", async ({ params }) => {
    const session = stored[params.sessionId];
    if (session === undefined) throw RequestError.resourceNotFound(params.sessionId);
    const replay = params.replayFrom;
    if (replay !== null && replay !== undefined && replay.type !== "start") {
        throw RequestError.invalidParams({ replayFrom: replay.type }, "this Agent replays only from the start");
    }
    const current = open(params.sessionId);
    if (replay?.type === "start") {
        for (const message of session.messages) {
            const { messageId, content } = message;
            if (message.role === "user") await reportUser(params.sessionId, messageId, content);
            else await notify(params.sessionId, { sessionUpdate: "agent_message", messageId, content });
        }
    }
    await notify(
        params.sessionId,
        current.working ? { sessionUpdate: "state_update", state: "running" } : idle("end_turn"),
    );
    return {};
});

app.onRequest("session/list", () => ({
    sessions: Object.entries(stored).map(([sessionId, s]) => ({ sessionId, cwd: s.cwd, updatedAt: s.updatedAt })),
}));

app.onRequest("session/close", ({ params }) => {
    cancelSession(params.sessionId);
    live.delete(params.sessionId);
    return {};
});

app.onNotification("session/cancel", ({ params }) => cancelSession(params.sessionId));

app.onNotification("*", ({ method, params }) => {
    if (method !== RELEASE || params === null || typeof params !== "object") return;
    const session = live.get(String((params as Record<string, unknown>)["sessionId"]));
    if (session === undefined) return;
    const old = session.releaseNow;
    Object.assign(session, latch());
    old();
});

// session/prompt, with the params as they came: the key is there.
app.onRequest("*", async ({ method, params, signal, requestId }) => {
    if (method !== "session/prompt") throw RequestError.methodNotFound(method);
    const checked = promptRequest.safeParse(params);
    if (!checked.success) throw RequestError.invalidParams(undefined, String(checked.error).slice(0, 300));
    const raw = params as Record<string, unknown> & { sessionId: string; prompt: ContentBlock[] };
    const key = keyOf(raw);
    const session = live.get(raw.sessionId);
    const record = stored[raw.sessionId];
    if (session === undefined || record === undefined) throw RequestError.resourceNotFound(raw.sessionId);
    const hooks = hooksOf(raw);
    const hold = hooks["holdInsert"] === true ? session.release : null; // taken when the request is read
    const prompt = JSON.stringify(raw.prompt);
    const arrived = arrivedAt.get(JSON.stringify(requestId)) ?? lineNumber;
    arrivedAt.delete(JSON.stringify(requestId));
    const withdrawnAfter = (at: number | undefined) => at !== undefined && at > arrived;
    if (withdrawnAfter(sessionCancelledAt.get(raw.sessionId))) throw RequestError.requestCancelled();
    if (key !== null && session.withdrawn.some((w) => w.key === key && withdrawnAfter(w.at))) {
        throw RequestError.requestCancelled(); // an attempt of a prompt cancelled after this one came
    }
    if (key !== null) {
        const known = record.keys[key];
        if (known !== undefined) {
            if (known.prompt !== prompt) throw RequestError.invalidParams(undefined, "the key was used for another prompt");
            if (rerunWork) {
                session.queue.push(false); // the mistake: the retry runs the turn again
                if (!session.working) void work(raw.sessionId, session, record);
            }
            return { messageId: known.messageId };
        }
        for (const pending of session.pending) {
            if (pending.key === key) {
                if (pending.prompt !== prompt) throw RequestError.invalidParams(undefined, "the key is pending for another prompt");
                return { messageId: await join(pending, signal, requestId) };
            }
        }
    }
    const pending: Pending = { sessionId: raw.sessionId, key, prompt, waiters: [], cancelled: false, wake: () => {} };
    session.pending.add(pending);
    const answer = join(pending, signal, requestId);
    void insert(pending, session, record, raw.prompt, hooks, hold);
    return { messageId: await answer };
});

function join(pending: Pending, signal: AbortSignal, requestId: unknown): Promise<string> {
    return new Promise<string>((resolve, reject) => {
        pending.waiters.push({ resolve, reject });
        // $/cancel_request for any attempt withdraws the prompt: every attempt with its key gets -32800. The
        // request may be cancelled before its handler runs; then the signal is already aborted.
        const cancel = () => withdraw(pending, cancelledAt.get(JSON.stringify(requestId)) ?? lineNumber);
        if (signal.aborted) cancel();
        else signal.addEventListener("abort", cancel, { once: true });
    });
}

function withdraw(pending: Pending, at: number): void {
    if (pending.cancelled) return;
    pending.cancelled = true;
    const session = live.get(pending.sessionId);
    session?.pending.delete(pending);
    if (pending.key !== null) session?.withdrawn.push({ key: pending.key, at });
    for (const waiter of pending.waiters) waiter.reject(RequestError.requestCancelled());
    pending.wake();
}

async function insert(
    pending: Pending,
    session: Live,
    record: StoredSession,
    prompt: ContentBlock[],
    hooks: Record<string, unknown>,
    hold: Promise<void> | null,
): Promise<void> {
    if (hooks["failInsert"] === true) {
        session.pending.delete(pending);
        for (const waiter of pending.waiters) waiter.reject(RequestError.internalError(undefined, "a pre-insertion hook failed"));
        return;
    }
    if (hold !== null) await Promise.race([hold, new Promise<void>((wake) => (pending.wake = wake))]);
    if (pending.cancelled) return;
    session.pending.delete(pending);
    const messageId = `msg_${crypto.randomUUID()}`;
    record.messages.push({ role: "user", messageId, content: prompt });
    if (pending.key !== null) record.keys[pending.key] = { messageId, prompt: pending.prompt };
    record.updatedAt = new Date().toISOString();
    save(); // stored before it is reported, so a killed process never loses a message it announced
    if (chunks) {
        for (const waiter of pending.waiters) waiter.resolve(messageId);
        await new Promise((resolve) => setTimeout(resolve, 20)); // the answer goes first, the report after it
        await reportUser(pending.sessionId, messageId, prompt);
    } else {
        await reportUser(pending.sessionId, messageId, prompt);
        for (const waiter of pending.waiters) waiter.resolve(messageId);
    }
    session.queue.push(hooks["holdWork"] === true);
    if (!session.working) void work(pending.sessionId, session, record);
}

// The report of an inserted user message: one user_message update, or (--chunks) user_message_chunk updates with
// the same messageId whose contents append to the message.
async function reportUser(sessionId: string, messageId: string, content: ContentBlock[]): Promise<void> {
    if (noReport) return;
    if (!chunks) return notify(sessionId, { sessionUpdate: "user_message", messageId, content });
    for (const block of content) {
        const text = block.type === "text" && typeof block.text === "string" ? block.text : "";
        const parts =
            text.length > 1
                ? [text.slice(0, 1), text.slice(1)].map((part) => ({ ...block, text: part }) as ContentBlock)
                : [block];
        for (const part of parts) await notify(sessionId, { sessionUpdate: "user_message_chunk", messageId, content: part });
    }
}

// Asks the Client before the turn's output; true when it chose an allow option.
async function permitted(sessionId: string): Promise<boolean> {
    await notify(sessionId, { sessionUpdate: "state_update", state: "requires_action" });
    try {
        const { outcome } = await client!.request("session/request_permission", {
            sessionId,
            title: "Write the answer",
            options: [
                { optionId: "yes", name: "Allow", kind: "allow_once" },
                { optionId: "no", name: "Reject", kind: "reject_once" },
            ],
        });
        return outcome.outcome === "selected" && outcome.optionId === "yes";
    } catch {
        return false; // the connection went away while asking
    } finally {
        await notify(sessionId, { sessionUpdate: "state_update", state: "running" }).catch(() => {});
    }
}

function idle(stopReason: "end_turn" | "cancelled"): SessionUpdate {
    return stopReason === "end_turn"
        ? { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" }
        : { sessionUpdate: "state_update", state: "idle", stopReason: "cancelled" };
}

async function work(sessionId: string, session: Live, record: StoredSession): Promise<void> {
    session.working = true;
    let cancelled = false;
    const stop = new Promise<void>((resolve) => (session.cancelWork = () => ((cancelled = true), resolve())));
    await notify(sessionId, { sessionUpdate: "state_update", state: "running" });
    while (session.queue.length > 0 && !cancelled) {
        if (session.queue.shift() === true) await Promise.race([session.release, stop]);
        if (cancelled) break;
        if (askPermission && !(await permitted(sessionId))) continue;
        const messageId = `msg_agent_${crypto.randomUUID()}`;
        const content: ContentBlock[] = [{ type: "text", text: "Done." }];
        record.messages.push({ role: "agent", messageId, content });
        save();
        await notify(sessionId, { sessionUpdate: "agent_message", messageId, content });
    }
    session.queue.length = 0;
    session.working = false;
    session.cancelWork = null;
    await notify(sessionId, idle(cancelled ? "cancelled" : "end_turn"));
}

function cancelSession(sessionId: string): void {
    const session = live.get(sessionId);
    if (session === undefined) return;
    for (const pending of [...session.pending]) withdraw(pending, sessionCancelledAt.get(sessionId) ?? lineNumber);
    session.cancelWork?.();
}

const connection = app.connect(
    ndJsonStream(
        Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
        (Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>).pipeThrough(tap()),
    ),
);
client = connection.client;
await connection.closed.catch(() => {});
process.exit(0);
