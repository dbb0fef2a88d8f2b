// The node side of bench/bench_zod.py: the TypeScript SDK's own zod validators (@agentclientprotocol/sdk, the
// schema/zod.gen.js beside its ./experimental/v2 entry point, as tests/interop/sdk_client.ts loads them), driven
// over stdin/stdout by the bench, one JSON object a line each way, so that node starts once and each timed round
// counts validation only.
//
//     node zod_child.mjs SDK_DIR        (SDK_DIR: the folder whose node_modules holds the SDK, tools/acp-sdk)
//
// Requests, each answered by one line:
//     {"op": "names"}                       -> {"names": [every zod validator the SDK exports, "zPromptRequest", ...]}
//     {"op": "load", "payloads": [[VALIDATOR, TEXT], ...]}   -> {"loaded": N}   (TEXT: the payload's JSON text)
//     {"op": "check"}                       -> {"verdicts": [null when accepted, else why refused, per payload]}
//     {"op": "round", "passes": K}          -> {"cpu": S, "wall": S, "refused": N}
// A round runs JSON.parse(TEXT) then VALIDATOR.safeParse(value) over every loaded payload, K times over; `cpu` is
// the process's CPU seconds (user + system, process.cpuUsage) spent in it, `wall` its elapsed seconds, `refused`
// how many safeParse calls failed (0 when every payload is one zod accepts). End of input ends the child.

import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const sdkDir = process.argv[2];
if (sdkDir === undefined) {
    process.stderr.write("usage: node zod_child.mjs SDK_DIR\n");
    process.exit(2);
}
const entry = createRequire(join(resolve(sdkDir), "package.json")).resolve("@agentclientprotocol/sdk/experimental/v2");
const zod = await import(new URL("../schema/zod.gen.js", pathToFileURL(entry)).href);

let loaded = []; // [validator, text] pairs
let names = []; // the validator's name of each

function refusal(name, text) {
    const validator = zod[name];
    if (validator === undefined || typeof validator.safeParse !== "function") return `no zod validator ${name}`;
    let value;
    try {
        value = JSON.parse(text);
    } catch (error) {
        return `not JSON: ${error.message}`;
    }
    const verdict = validator.safeParse(value);
    if (verdict.success) return null;
    const issue = verdict.error.issues[0];
    return `${issue.path.join(".") || "(top)"}: ${issue.message}`;
}

function round(passes) {
    const cpu = process.cpuUsage();
    const wall = process.hrtime.bigint();
    let refused = 0;
    for (let pass = 0; pass < passes; pass++) {
        for (const [validator, text] of loaded) {
            if (!validator.safeParse(JSON.parse(text)).success) refused++;
        }
    }
    const elapsed = Number(process.hrtime.bigint() - wall) / 1e9;
    const used = process.cpuUsage(cpu);
    return { cpu: (used.user + used.system) / 1e6, wall: elapsed, refused };
}

function answer(request) {
    switch (request.op) {
        case "names":
            return { names: Object.keys(zod).filter((name) => typeof zod[name]?.safeParse === "function") };
        case "load":
            // an unknown validator name stays in as undefined: `check` says so, and a round would throw
            loaded = request.payloads.map(([name, text]) => [zod[name], text]);
            names = request.payloads.map(([name]) => name);
            return { loaded: loaded.length };
        case "check":
            return { verdicts: loaded.map(([, text], index) => refusal(names[index], text)) };
        case "round":
            return round(request.passes);
        default:
            return { error: `unknown op ${JSON.stringify(request.op)}` };
    }
}

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    let reply;
    try {
        reply = answer(JSON.parse(line));
    } catch (error) {
        reply = { error: String(error?.stack ?? error) };
    }
    process.stdout.write(JSON.stringify(reply) + "\n");
}
