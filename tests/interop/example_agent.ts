// An Agent written the way the TypeScript SDK's own v2 example Agent is (`src/examples/dual-version-agent.ts` in
// the SDK's repository, left out of the published package): typed handlers for initialize, session/new,
// session/prompt and session/cancel on the experimental v2 AgentApp, nothing else, no idempotency keys, no
// handshake. Each prompt's turn reports the user message, `running`, one agent message and `idle`; like the
// example, the session/prompt handler returns nothing, so the SDK answers with `result: null`.
//
//     node example_agent.js [--fixed]
//
// --fixed is the example's one-line fix: the handler returns the inserted message's `{messageId}`.

import { Readable, Writable } from "node:stream";
import { agent, ndJsonStream, PROTOCOL_VERSION, type AgentContext, type PromptRequest } from "@agentclientprotocol/sdk/experimental/v2";

const fixed = process.argv.includes("--fixed");
const sessions = new Set<string>();

async function turn(params: PromptRequest, client: AgentContext, userMessageId: string): Promise<void> {
    const { sessionId } = params;
    await client.notify("session/update", {
        sessionId,
        update: { sessionUpdate: "user_message", messageId: userMessageId, content: params.prompt },
    });
    await client.notify("session/update", { sessionId, update: { sessionUpdate: "state_update", state: "running" } });
    await client.notify("session/update", {
        sessionId,
        update: {
            sessionUpdate: "agent_message",
            messageId: crypto.randomUUID(),
            content: [{ type: "text", text: "An answer from the example." }],
        },
    });
    await client.notify("session/update", {
        sessionId,
        update: { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" },
    });
}

const app = agent({ name: "example-agent" })
    .onRequest("initialize", () => ({
        protocolVersion: PROTOCOL_VERSION,
        info: { name: "example-agent", version: "1.0.0" },
        capabilities: { session: {} },
    }))
    .onRequest("session/new", () => {
        const sessionId = crypto.randomUUID();
        sessions.add(sessionId);
        return { sessionId };
    })
    .onRequest("session/prompt", ({ params, client }) => {
        if (!sessions.has(params.sessionId)) throw new Error(`Session ${params.sessionId} not found`);
        const messageId = crypto.randomUUID();
        void turn(params, client, messageId).catch((error: unknown) => console.error("the turn failed", error));
        if (fixed) return { messageId };
        return undefined as unknown as { messageId: string }; // as the example: the handler returns nothing
    })
    .onNotification("session/cancel", () => {});

const connection = app.connect(
    ndJsonStream(
        Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
        Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
    ),
);
await connection.closed.catch(() => {});
process.exit(0);
