// The TypeScript SDK's own client (ClientApp over createHttpStream or createWebSocketStream) through the cluster's
// balancer, with a cookie store of the caller's, as the SDK's docs say a reconnecting client keeps affinity.
//
//     node sdk_cluster_client.js URL http|ws
//
// Phase 1: initialize, session/new, a keyed prompt; then the connection is closed and one JSON line is printed
// (the session, the key, the messageId, every Set-Cookie the SDK's cookie store was given). The script then waits
// for a line on standard input (the test kills the node meanwhile). Phase 2, a new connection with the same cookie
// store: initialize, session/resume, the same prompt with the same key, and session/resume replaying from the
// start; a second JSON line gives the messageId, the cookies and the user messages the replay showed.

import { createInterface } from "node:readline";
import { client, PROTOCOL_VERSION, type PromptRequest, type Stream } from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream, MemoryAcpCookieStore } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import type { AcpCookieStore } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";

const [url, profile] = process.argv.slice(2);
if (url === undefined || (profile !== "http" && profile !== "ws")) throw new Error("usage: URL http|ws");
const CWD = process.cwd();

/** The SDK's in-memory store, recording every Set-Cookie it is handed (on a POST answer or a WebSocket 101). */
class RecordingStore implements AcpCookieStore {
    readonly inner = new MemoryAcpCookieStore();
    seen: string[] = [];
    store(headers: Headers): void {
        this.seen.push(...headers.getSetCookie());
        this.inner.store(headers);
    }
    apply(headers: Headers): void {
        this.inner.apply(headers);
    }
    clear(): void {
        this.inner.clear();
    }
}

const cookies = new RecordingStore();
const updates: { sessionUpdate: string; messageId?: string }[] = [];

// The SDK's HTTP client closes a connection (its DELETE) after connectWith has returned. Phase 1 waits for every
// request to end before it reports, so that no DELETE is still on its way when the test kills the node: one that
// reached the balancer after the kill would be redispatched, and its answer would set a cookie for another node.
const pending = new Set<Promise<unknown>>();
const tracked: typeof globalThis.fetch = (input, init) => {
    const request = globalThis.fetch(input, init);
    const settled = request.then(
        (response) => response,
        () => undefined,
    );
    pending.add(settled);
    void settled.finally(() => pending.delete(settled));
    return request;
};

function open(): Stream {
    const stream =
        profile === "http"
            ? createHttpStream(url!, { cookieStore: cookies, fetch: tracked })
            : createWebSocketStream(url!.replace(/^http/, "ws"), { cookieStore: cookies, WebSocket });
    // Every session/update the Agent sends is noted on the way in (the replay is read from here).
    const noted = stream.readable.pipeThrough(
        new TransformStream({
            transform(message, controller) {
                const params = (message as { method?: string; params?: { update?: { sessionUpdate: string; messageId?: string } } });
                if (params.method === "session/update" && params.params?.update) updates.push(params.params.update);
                controller.enqueue(message);
            },
        }),
    );
    return { readable: noted, writable: stream.writable };
}

const app = client({ name: "cluster-sdk-client" });
const init = { protocolVersion: PROTOCOL_VERSION, info: { name: "cluster-sdk-client", version: "0.0.0" } };
const key = `k-${crypto.randomUUID()}`;

const first = await app.connectWith(open(), async (ctx) => {
    await ctx.request("initialize", init);
    const session = await ctx.buildSession(CWD).start();
    const prompt: PromptRequest & { idempotencyKey: string } = {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: "through the balancer" }],
        idempotencyKey: key,
    };
    const answer = await ctx.request("session/prompt", prompt);
    session.dispose();
    return { sessionId: session.sessionId, messageId: answer.messageId };
});
for (let rounds = 0; pending.size > 0 && rounds < 100; rounds++) await Promise.allSettled([...pending]);
process.stdout.write(JSON.stringify({ phase: 1, ...first, key, cookies: cookies.seen }) + "\n");

const input = createInterface({ input: process.stdin });
await new Promise<void>((done) => input.once("line", () => done()));
input.close();
const seenBefore = cookies.seen.length;

const second = await app.connectWith(open(), async (ctx) => {
    await ctx.request("initialize", init);
    await ctx.request("session/resume", { sessionId: first.sessionId, cwd: CWD });
    const prompt: PromptRequest & { idempotencyKey: string } = {
        sessionId: first.sessionId,
        prompt: [{ type: "text", text: "through the balancer" }],
        idempotencyKey: key,
    };
    const answer = await ctx.request("session/prompt", prompt);
    updates.length = 0;
    await ctx.request("session/resume", { sessionId: first.sessionId, cwd: CWD, replayFrom: { type: "start" } });
    const replayed = updates.filter((u) => u.sessionUpdate === "user_message").map((u) => u.messageId);
    return { messageId: answer.messageId, replayedUserMessages: replayed };
});
process.stdout.write(JSON.stringify({ phase: 2, ...second, cookies: cookies.seen.slice(seenBefore) }) + "\n");
process.exit(0);
