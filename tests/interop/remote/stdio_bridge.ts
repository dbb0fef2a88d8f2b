// An ACP connection over the remote transport, seen from stdio: each line read on stdin goes to the endpoint as one
// message, each message from the endpoint comes out on stdout as one line. The transport is the TypeScript SDK's
// own Client side (createHttpStream or createWebSocketStream), so the conformance kit, which starts an Agent
// command per connection, runs its traces against a served Agent: every process of a trace is a new connection to
// the same server.
//
//     node stdio_bridge.js URL http|websocket
//
// It ends when stdin ends (closing the connection: a DELETE on HTTP) or when the endpoint ends the connection.

import { createInterface } from "node:readline";
import { WebSocket } from "ws";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream, type WebSocketConstructor } from "@agentclientprotocol/sdk/experimental/ws-client";
import type { AnyMessage } from "@agentclientprotocol/sdk/experimental/v2";

const [url = "", profile = "http"] = process.argv.slice(2);
const stream =
    profile === "websocket"
        ? createWebSocketStream(url.replace(/^http/, "ws"), { WebSocket: WebSocket as unknown as WebSocketConstructor })
        : createHttpStream(url);
const writer = stream.writable.getWriter();

void (async () => {
    try {
        for await (const message of stream.readable as unknown as AsyncIterable<AnyMessage>) {
            process.stdout.write(JSON.stringify(message) + "\n");
        }
    } catch (error) {
        process.stderr.write(`bridge: the connection failed: ${String(error)}\n`);
    }
    process.exit(0);
})();

// Lines go out in order; the SDK's transport queues them (a POST at a time on HTTP).
let sending: Promise<void> = Promise.resolve();
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
    if (line.trim() === "") return;
    let message: AnyMessage;
    try {
        message = JSON.parse(line) as AnyMessage;
    } catch {
        process.stderr.write("bridge: a line that is not JSON was not sent\n");
        return;
    }
    sending = sending.then(() => writer.write(message)).catch((error) => {
        process.stderr.write(`bridge: a message could not be sent: ${String(error)}\n`);
    });
});
lines.on("close", () => {
    void sending.then(() => writer.close()).finally(() => process.exit(0));
});
