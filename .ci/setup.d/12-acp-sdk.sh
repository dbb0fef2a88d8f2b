#!/usr/bin/env bash
# The ACP TypeScript SDK for the interop tests in tests/interop/: @agentclientprotocol/sdk (its experimental v2
# API and zod validators), zod and the Node type declarations, pinned in tools/acp-sdk/package-lock.json and
# installed with `npm ci`. The tests compile their TypeScript with the compiler of 10-node-typescript.sh, which
# runs first (and installs node and npm when the machine has none). Safe to run twice: `npm ci` replaces
# tools/acp-sdk/node_modules with exactly what the lock file names. Fails loudly when node cannot load the SDK.
set -euo pipefail
cd "$(dirname "$0")/../../tools/acp-sdk"

command -v node >/dev/null && command -v npm >/dev/null || {
    echo "acp-sdk: node and npm are missing; run .ci/setup.d/10-node-typescript.sh first" >&2
    exit 1
}
npm ci --no-audit --no-fund
node --input-type=module -e '
import { agent, client } from "@agentclientprotocol/sdk/experimental/v2";
import * as zod from "@agentclientprotocol/sdk/dist/v2/schema/zod.gen.js";
if (typeof agent !== "function" || typeof client !== "function" || !zod.zPromptRequest) {
    throw new Error("the SDK does not export its v2 apps and validators");
}
console.log("acp-sdk: @agentclientprotocol/sdk " + process.env.npm_package_version + " loads");
' 2>&1 || { echo "acp-sdk: the installed SDK does not load" >&2; exit 1; }
