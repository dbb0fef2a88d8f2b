"""A minimal line-based JSON-RPC client for driving the reference Agent in tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from generator import paths

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = ROOT / paths.PYTHON_DIST


def agent_command(db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "acp_v2_schema.reference_agent", "--db", str(db), *extra]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_DIR), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # keep generated/ free of caches
    return env


class AgentProcess:
    """One reference Agent process; `request` waits for the answer, skipping notifications."""

    def __init__(self, db: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            agent_command(db, *extra),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment(),
            text=True,
        )
        self.next_id = 0
        self.notifications: list[dict[str, Any]] = []

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The response message, or None when the Agent exited before answering."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        while line := self.proc.stdout.readline():
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                return message
            self.notifications.append(message)
        return None

    def close(self) -> int:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        return self.proc.wait(timeout=30)
