#!/usr/bin/env bash
# The TypeScript ACP SDK's code generator for tests/sdk_pipelines/ and bench/bench_sdk_generators.py:
# @hey-api/openapi-ts with zod, prettier (the SDK's generate step formats its output with it) and the TypeScript
# compiler, pinned in tools/ts-pipeline/package-lock.json and installed with `npm ci`. Node and npm come from
# 10-node-typescript.sh, which runs first. Safe to run twice: `npm ci` replaces tools/ts-pipeline/node_modules
# with exactly what the lock file names. Fails loudly when the install does not give a working generator,
# formatter and compiler.
set -euo pipefail
cd "$(dirname "$0")/../../tools/ts-pipeline"

command -v node >/dev/null || { echo "ts-pipeline: node is missing (10-node-typescript.sh installs it)" >&2; exit 1; }
echo "ts-pipeline: node $(node --version), npm $(npm --version)"
npm ci --no-audit --no-fund
./node_modules/.bin/tsc --version
prettier_version=$(./node_modules/.bin/prettier --version)
echo "ts-pipeline: prettier $prettier_version"
node --input-type=module -e 'await import("@hey-api/openapi-ts"); await import("@hey-api/openapi-ts/plugins"); console.log("ts-pipeline: hey-api loads")'
