"""The baseline of `make compat` before the first release: the stable schema ACP publishes.

Until a `v*` tag exists there is no release of ours to compare with, but the published ACP schema is one: the stable
surface it defines is what implementers build on today. It is the pinned npm release the audit reads (its integrity
checked when it is fetched), kept under .cache/ so that later runs need no network.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..read.published import UPSTREAM, fetch_upstream

CACHE = Path(".cache") / "compat"


def label() -> str:
    """How reports name the baseline."""
    return f"{UPSTREAM.spec} schema/v2/schema.json (ACP's published stable schema)"


def stable_schema(root: Path) -> Path:
    """The published stable schema, fetched into ROOT/.cache/compat/ on first use; FetchError when it cannot be."""
    folder = root / CACHE / f"{UPSTREAM.name.replace('/', '+')}-{UPSTREAM.version}"
    if not (folder / "schema.json").is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".fetch-") as tmp:
            fetch_upstream(Path(tmp) / "schemas")  # both files, each checked against the pinned integrity
            if not (folder / "schema.json").is_file():  # another run may have finished first
                (Path(tmp) / "schemas").replace(folder)
    return folder / "schema.json"
