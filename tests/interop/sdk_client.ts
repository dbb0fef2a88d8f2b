// The TypeScript SDK's ClientApp (@agentclientprotocol/sdk, ./experimental/v2) drives an ACP v2 Agent over stdio
// through a whole session, recording every line on the wire both ways and checking each with the SDK's own zod
// validators. It prints one JSON report on stdout: what each step got, the wire, and every line zod refused.
//
//     node sdk_client.js AGENT COMMAND...
//
// The steps: initialize; session/new; a prompt without a key; a keyed prompt and its retry (same key, new id);
// the updates until idle; a turn held running, ended by session/cancel; a held prompt withdrawn with $/cancel_request (the SDK sends it when
// the prompt's cancellationSignal aborts); session/list; session/resume without replayFrom and with
// replayFrom {type: "start"}; session/close.

import { spawn } from "node:child_process";
import { Readable } from "node:stream";
import { client, ndJsonStream, PROTOCOL_VERSION, RequestError, type PromptRequest } from "@agentclientprotocol/sdk/experimental/v2";

type Parser = { safeParse(value: unknown): { success: boolean; error?: unknown } };
const zodUrl = new URL("../schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk/experimental/v2"));
const z = (await import(zodUrl.href)) as Record<string, Parser>;

// The handshake's `_meta` key, which the tests take from the traces document (an Agent author writes it out).
const HANDSHAKE_KEY: string =
    process.env["ACP_CONFORMANCE_META_KEY"] ??
    (() => {
        throw new Error("set ACP_CONFORMANCE_META_KEY to the handshake's _meta key");
    })();
const CWD = process.cwd();

// What zod checks each message against: params by method for calls, results by the method they answer.
const PARAMS: Record<string, string> = {
    initialize: "zInitializeRequest",
    "session/new": "zNewSessionRequest",
    "session/prompt": "zPromptRequest",
    "session/list": "zListSessionsRequest",
    "session/resume": "zResumeSessionRequest",
    "session/close": "zCloseSessionRequest",
    "session/cancel": "zCancelSessionNotification",
    "$/cancel_request": "zCancelRequestNotification",
    "session/update": "zUpdateSessionNotification",
};
const RESULTS: Record<string, string> = {
    initialize: "zInitializeResponse",
    "session/new": "zNewSessionResponse",
    "session/prompt": "zPromptResponse",
    "session/list": "zListSessionsResponse",
    "session/resume": "zResumeSessionResponse",
    "session/close": "zCloseSessionResponse",
};

type WireLine = { dir: "client->agent" | "agent->client"; line: string };
const wire: WireLine[] = [];
const refused: { index: number; validator: string; error: string }[] = [];
const methodsById = new Map<string, string>();

function check(index: number, entry: WireLine): void {
    const message = JSON.parse(entry.line) as Record<string, unknown>;
    let validator: string | undefined;
    let value: unknown;
    if (typeof message["method"] === "string") {
        const method = message["method"];
        if ("id" in message) methodsById.set(JSON.stringify(message["id"]), method);
        validator = method.startsWith("_") ? "zExtNotification" : PARAMS[method];
        value = method.startsWith("_") ? message : message["params"];
    } else if ("error" in message) {
        validator = "zError";
        value = message["error"];
    } else {
        validator = RESULTS[methodsById.get(JSON.stringify(message["id"])) ?? ""];
        value = message["result"];
    }
    const parser = validator === undefined ? undefined : z[validator];
    const verdict = parser === undefined ? { success: false, error: "no validator" } : parser.safeParse(value);
    if (!verdict.success) refused.push({ index, validator: validator ?? "?", error: String(verdict.error).slice(0, 500) });
}

function record(dir: WireLine["dir"]): TransformStream<Uint8Array, Uint8Array> {
    let pending = "";
    const decoder = new TextDecoder();
    return new TransformStream({
        transform(chunk, controller) {
            pending += decoder.decode(chunk, { stream: true });
            let end: number;
            while ((end = pending.indexOf("\n")) >= 0) {
                const line = pending.slice(0, end);
                pending = pending.slice(end + 1);
                if (line.trim() !== "") {
                    wire.push({ dir, line });
                    check(wire.length - 1, wire[wire.length - 1]!);
                }
            }
            controller.enqueue(chunk);
        },
    });
}

const [command, ...args] = process.argv.slice(2);
const agentProcess = spawn(command!, args, { stdio: ["pipe", "pipe", "inherit"] });
const toAgent = record("client->agent");
void toAgent.readable.pipeTo(
    new WritableStream({
        write: (chunk) => new Promise<void>((done) => agentProcess.stdin!.write(chunk, () => done())),
        close: () => void agentProcess.stdin!.end(),
    }),
);
const fromAgent = (Readable.toWeb(agentProcess.stdout!) as ReadableStream<Uint8Array>).pipeThrough(record("agent->client"));

const steps: Record<string, unknown> = {};
const app = client({ name: "interop-sdk-client" });

async function codeOf(promise: Promise<unknown>): Promise<number | string> {
    try {
        await promise;
        return "resolved";
    } catch (error) {
        return error instanceof RequestError ? error.code : String(error);
    }
}

await app.connectWith(ndJsonStream(toAgent.writable, fromAgent), async (ctx) => {
    const init = await ctx.request("initialize", {
        protocolVersion: PROTOCOL_VERSION,
        info: { name: "interop-sdk-client", version: "0.0.0" },
        _meta: { [HANDSHAKE_KEY]: {} },
    });
    steps["initialize"] = init;
    const session = await ctx.buildSession(CWD).start();
    const sessionId = session.sessionId;
    steps["sessionId"] = sessionId;

    steps["unkeyed"] = (await session.prompt("hello")).messageId;
    // The SDK's PromptRequest type has no idempotencyKey: the key goes in as an extra member, on the wire as is.
    const keyed: PromptRequest & { idempotencyKey: string } = {
        sessionId,
        prompt: [{ type: "text", text: "keyed hello" }],
        idempotencyKey: `k-${crypto.randomUUID()}`,
    };
    steps["key"] = keyed.idempotencyKey;
    steps["keyed"] = (await ctx.request("session/prompt", keyed)).messageId;
    steps["retry"] = (await ctx.request("session/prompt", { ...keyed })).messageId;

    // Each inserted prompt starts a turn: running, the Agent's message, idle. Two turns, two stops.
    const until = AbortSignal.timeout(20_000);
    const seen: string[] = [];
    for (let stops = 0; stops < 2; ) {
        const message = await session.nextUpdate(until);
        seen.push(message.update.sessionUpdate);
        if (message.kind === "stop") stops += 1;
    }
    steps["updates"] = seen;

    // A turn held running by the holdWork hook, then session/cancel: the turn ends as cancelled.
    await ctx.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "long work" }],
        _meta: { [HANDSHAKE_KEY]: { holdWork: true } },
    });
    for (;;) {
        const message = await session.nextUpdate(until);
        if (message.update.sessionUpdate === "state_update" && message.kind !== "stop") break; // running
    }
    await ctx.notify("session/cancel", { sessionId });
    for (;;) {
        const message = await session.nextUpdate(until);
        if (message.kind === "stop") {
            steps["cancelledTurn"] = message.stopReason;
            break;
        }
    }

    const held = new AbortController();
    const heldPrompt = ctx.request(
        "session/prompt",
        { sessionId, prompt: [{ type: "text", text: "held" }], _meta: { [HANDSHAKE_KEY]: { holdInsert: true } } },
        { cancellationSignal: held.signal },
    );
    setTimeout(() => held.abort(), 200);
    steps["cancelRequest"] = await codeOf(heldPrompt);

    steps["list"] = await ctx.request("session/list", {});
    steps["resumeWithoutReplay"] = await ctx.request("session/resume", { sessionId, cwd: CWD });
    steps["resumeWithReplay"] = await ctx.request("session/resume", { sessionId, cwd: CWD, replayFrom: { type: "start" } });
    steps["close"] = await ctx.request("session/close", { sessionId });
    session.dispose();
});
agentProcess.stdin!.end();
await new Promise<void>((done) => (agentProcess.exitCode !== null ? done() : agentProcess.on("exit", () => done())));
process.stdout.write(JSON.stringify({ steps, wire, refused, agentExit: agentProcess.exitCode }) + "\n");
