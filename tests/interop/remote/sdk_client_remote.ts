// The TypeScript SDK's own Client over ACP's remote transport (createHttpStream / createWebSocketStream and the v2
// ClientApp), doing what an application must do on top of it, since the SDK never resends and has no request
// timeout: a keyed prompt, and on any failure (an error the transport made up, a closed stream, no answer within
// --timeout) a new connection, initialize, session/resume with replay, and the same prompt again with its key.
//
//     node sdk_client_remote.js --url URL --profile http|websocket [--timeout MS] [--attempts N] [--text TEXT]
//     node sdk_client_remote.js --url URL --profile http|websocket --bench ROUNDS [--batch N] --side URL|keyed ...
//
// Prints one JSON object a line, for the Python test to judge: {"event": "session"}, then per attempt "attempt"
// and either "answer" (its messageId) or "failure" (kind "error" with the JSON-RPC code, message and data the SDK
// reported, "closed", or "timeout"), "replay" (the user messages a resume replayed), and last "final": the
// messageId the prompt ended with and the user messages a resume on a fresh connection replays afterwards.
// --bench measures prompts per second on each --side (an endpoint, then `|keyed` or `|unkeyed`), a batch of N
// prompts on each side in turn for ROUNDS rounds (see runBench); it prints a "bench" line per side.

import { WebSocket } from "ws";
import { client, PROTOCOL_VERSION, RequestError, type ClientConnection, type PromptRequest } from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream, type WebSocketConstructor } from "@agentclientprotocol/sdk/experimental/ws-client";

function option(name: string): string | undefined {
    const at = process.argv.indexOf(name);
    return at >= 0 ? process.argv[at + 1] : undefined;
}
const url = option("--url") ?? "";
const profile = option("--profile") ?? "http";
const timeoutMs = Number(option("--timeout") ?? "5000");
const attempts = Number(option("--attempts") ?? "4");
const text = option("--text") ?? `keyed prompt ${crypto.randomUUID()}`;
const bench = option("--bench");
const sides = process.argv.flatMap((arg, at) => (process.argv[at - 1] === "--side" ? [arg] : []));
if (url === "" || !["http", "websocket"].includes(profile)) {
    process.stderr.write("usage: sdk_client_remote.js --url URL --profile http|websocket\n");
    process.exit(2);
}

function say(event: string, fields: Record<string, unknown> = {}): void {
    process.stdout.write(JSON.stringify({ event, ...fields }) + "\n");
}

type Update = { sessionId: string; update: { sessionUpdate: string; messageId?: string; content?: unknown } };
type Link = { connection: ClientConnection; updates: Update[] };

// One transport connection, with the session/update notifications it received.
async function open(target: string = url): Promise<Link> {
    const stream =
        profile === "http"
            ? createHttpStream(target)
            : createWebSocketStream(target.replace(/^http/, "ws"), { WebSocket: WebSocket as unknown as WebSocketConstructor });
    const updates: Update[] = [];
    const app = client({ name: "sdk-client-remote" }).onNotification("session/update", ({ params }) => {
        updates.push(params as Update);
    });
    const link = { connection: app.connect(stream), updates };
    await settled(link, () =>
        link.connection.agent.request("initialize", {
            protocolVersion: PROTOCOL_VERSION,
            info: { name: "sdk-client-remote", version: "0.0.0" },
        }),
    );
    return link;
}

class Timeout extends Error {}

// The SDK waits for an answer for ever; an application must not.
async function bounded<T>(promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Timeout()), timeoutMs)));
    try {
        return await Promise.race([promise, late]);
    } finally {
        clearTimeout(timer);
    }
}

// What the SDK told the application, and whether the connection was still open afterwards.
function failure(error: unknown, link: Link | null): Record<string, unknown> {
    const closed = link === null || link.connection.signal.aborted;
    if (error instanceof Timeout) return { kind: "timeout", closed };
    if (error instanceof RequestError) {
        return { kind: "error", code: error.code, message: error.message, data: error.data ?? null, closed };
    }
    return { kind: "closed", message: String(error), closed };
}

function userMessages(updates: Update[], sessionId: string): { messageId: string; text: string }[] {
    return updates
        .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "user_message")
        .map((u) => {
            const content = (u.update.content ?? []) as { type: string; text?: string }[];
            return { messageId: u.update.messageId ?? "", text: content.map((block) => block.text ?? "").join("") };
        });
}

// A fresh connection that resumes the session with its whole history replayed.
async function resumed(sessionId: string): Promise<Link> {
    const link = await open();
    await settled(link, () =>
        link.connection.agent.request("session/resume", { sessionId, cwd: process.cwd(), replayFrom: { type: "start" } }),
    );
    return link;
}

// A step of setting a connection up; the connection is closed when it fails, and the failure goes on.
async function settled<T>(link: Link, step: () => Promise<T>): Promise<T> {
    try {
        return await bounded(step());
    } catch (error) {
        close(link);
        throw error;
    }
}

function close(link: Link | null): void {
    try {
        link?.connection.close();
    } catch {
        // already closed
    }
}

// Two sides (an endpoint, keyed or not), each with a connection and a session of its own, measured in
// alternation: a batch of prompts on one side, then on the other, the first side changing every round, so that
// whatever else the machine does falls on both alike. Each prompt waits for its answer before the next goes.
async function runBench(rounds: number, batch: number, specs: string[]): Promise<void> {
    const sides = [];
    for (const spec of specs) {
        const [target = url, mode = "keyed"] = spec.split("|");
        const link = await open(target);
        const { sessionId } = await bounded(link.connection.agent.request("session/new", { cwd: process.cwd() }));
        sides.push({ target, keyed: mode === "keyed", link, sessionId, times: [] as number[] });
    }
    const warmup = Number(option("--warmup") ?? "2"); // untimed rounds first: JIT, caches, first statements
    for (let round = -warmup; round < rounds; round++) {
        for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
            const started = performance.now();
            for (let n = 0; n < batch; n++) {
                const params: PromptRequest & { idempotencyKey?: string } = { sessionId: side.sessionId, prompt: BENCH_PROMPT };
                if (side.keyed) params.idempotencyKey = `k-${crypto.randomUUID()}`;
                await bounded(side.link.connection.agent.request("session/prompt", params));
            }
            if (round >= 0) side.times.push((performance.now() - started) / 1000);
        }
    }
    for (const side of sides) {
        const sorted = [...side.times].sort((a, b) => a - b);
        const median = sorted[Math.floor(sorted.length / 2)]!;
        say("bench", { target: side.target, keyed: side.keyed, profile, batch, rounds, promptsPerSecond: batch / median });
        close(side.link);
    }
}

const BENCH_PROMPT: PromptRequest["prompt"] = [
    { type: "text", text: "Rename load_config to load_settings everywhere." },
    { type: "resource_link", uri: "file:///home/user/project/config.py", name: "config.py" },
];

async function runPrompt(): Promise<void> {
    let link: Link | null = await open();
    const { sessionId } = await bounded(link.connection.agent.request("session/new", { cwd: process.cwd() }));
    say("session", { sessionId, profile });
    // The SDK's PromptRequest type has no idempotencyKey: the key goes in as an extra member, on the wire as is.
    const prompt: PromptRequest & { idempotencyKey: string } = {
        sessionId,
        prompt: [{ type: "text", text }],
        idempotencyKey: `k-${crypto.randomUUID()}`,
    };
    let messageId: string | null = null;
    for (let attempt = 1; attempt <= attempts && messageId === null; attempt++) {
        say("attempt", { n: attempt });
        try {
            if (link === null) {
                link = await resumed(sessionId);
                say("replay", { n: attempt, userMessages: userMessages(link.updates, sessionId) });
            }
            messageId = (await bounded(link.connection.agent.request("session/prompt", { ...prompt }))).messageId;
            say("answer", { n: attempt, messageId });
        } catch (error) {
            say("failure", { n: attempt, ...failure(error, link) });
            close(link); // a new connection for the next attempt: a hung POST holds every later one on this one
            link = null;
        }
    }
    close(link);
    const check = await resumed(sessionId);
    say("final", { messageId, key: prompt.idempotencyKey, text, userMessages: userMessages(check.updates, sessionId) });
    close(check);
}

try {
    if (bench !== undefined) await runBench(Number(bench), Number(option("--batch") ?? "10"), sides);
    else await runPrompt();
} catch (error) {
    say("crash", { message: String(error instanceof Error ? (error.stack ?? error.message) : error) });
    process.exitCode = 1;
}
process.exit();
