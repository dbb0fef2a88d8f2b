#!/usr/bin/env bash
# The ACP TypeScript SDK for the interop tests in tests/interop/: @agentclientprotocol/sdk (its experimental v2
# API and zod validators), zod and the Node type declarations, pinned in tools/acp-sdk/package-lock.json and
# installed with `npm ci`. The tests compile their TypeScript with the compiler of 10-node-typescript.sh, which
# runs first (and installs node and npm when the machine has none). Safe to run twice: `npm ci` replaces
# tools/acp-sdk/node_modules with exactly what the lock file names. Fails loudly when node cannot load the SDK.
set -euo pipefail
cd "$(dirname "$0")/../../tools/acp-sdk"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "acp-sdk: node and npm are missing; run .ci/setup.d/10-node-typescript.sh first" >&2
    exit 1
fi
npm ci --no-audit --no-fund
# The v2 apps through the package's exports, and the zod validators beside them (as the tests import them).
node --input-type=module -e '
const entry = import.meta.resolve("@agentclientprotocol/sdk/experimental/v2");
const { agent, client } = await import(entry);
const zod = await import(new URL("../schema/zod.gen.js", entry).href);
if (typeof agent !== "function" || typeof client !== "function" || zod.zPromptRequest === undefined) {
    throw new Error("the SDK does not have its v2 apps and validators where the tests look for them");
}
' || { echo "acp-sdk: the installed SDK does not load" >&2; exit 1; }
echo "acp-sdk: @agentclientprotocol/sdk $(node -p 'require("./node_modules/@agentclientprotocol/sdk/package.json").version') loads"
