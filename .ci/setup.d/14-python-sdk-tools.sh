#!/usr/bin/env bash
# The Python ACP SDK's generator toolchains for tests/sdk_pipelines/ and bench/bench_sdk_generators.py: the pinned
# agent-client-protocol sdist (checked against its sha256) and one virtual environment per pin list under
# .cache/sdk-pipelines/ (python-sdk-tools.txt: datamodel-code-generator 0.71.0, the SDK's own; python-sdk-tools-0.35.txt:
# 0.35.0, the older release the corpus test also runs). The tests would build them on first use; building them here
# makes a machine that cannot reach the package index fail at setup, with pip's message, not halfway through the
# suite. Safe to run twice: a toolchain whose pin list has not changed is kept, and pip checks each set is complete.
set -euo pipefail
cd "$(dirname "$0")/../.."

make --no-print-directory .venv/.installed-stamp
.venv/bin/python - <<'PY'
from tests.sdk_pipelines import python_sdk

print("python-sdk-tools: sdist", python_sdk.fetch_sdist().name)
for tools in (python_sdk.TOOLS, python_sdk.OLDER_TOOLS):
    print("python-sdk-tools:", tools.name, "->", python_sdk.tool_python(tools=tools))
PY
