"""The parse cache: each spec file's parsed document and structure-check result, keyed by the bytes they came from.

Parsing the YAML and checking it against its meta-schema depend only on the file's bytes, the meta-schema's bytes
and the generator itself, so a file whose bytes did not change need not be parsed or checked again. The key hashes
those bytes with the file's name (diagnostics carry it) and the generator's environment (generator/cache.py); the
entry is pickled when it is made, before the meaning checks see the document, so nothing they do leaks into it.
The meaning checks, which read across files, always run, with two exceptions, each of which keeps only an outcome
without a problem, under a key that hashes everything it read: the meta-schema check of a types file's schemas
(per file: it reads that file's types alone), and the check of each worked example (the slowest of the checks,
and the only one that needs jsonschema-rs: per example, as `examples._inputs` says, so that editing one type
checks again only the examples that reach it).

The cache lives in one file beside the run cache (in the project's own .cache/, trusted as its sources are) and
holds entries for the files of the last run only.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path
from typing import Any

from .diagnostics import Diagnostic
from .loader import Document

PARSE_CACHE_FILE = Path(".cache/parsed.pickle")
Entry = tuple[Document | None, list[Diagnostic], list[Diagnostic]]  # document, parse problems, structure problems


class ParseCache:
    """Parsed and structure-checked spec files of the last run, and those of this run (saved for the next)."""

    def __init__(self, root: Path, environment: str) -> None:
        self.path = root / PARSE_CACHE_FILE
        self.environment = environment
        self.entries: dict[str, bytes] = {}
        self.used: dict[str, bytes] = {}
        try:
            saved = pickle.loads(self.path.read_bytes())
        except Exception:  # a missing, truncated or foreign cache file only means a cold start
            return
        if isinstance(saved, dict) and saved.get("environment") == environment:
            entries = saved.get("entries")
            self.entries = entries if isinstance(entries, dict) else {}

    def key(self, display: str, path: Path, data: bytes, meta: bytes) -> str:
        """The key of one spec file as read (`data`), checked against the meta-schema `meta`."""
        h = hashlib.sha256(f"{self.environment}\0{display}\0{path.as_posix()}\0{len(meta)}\0".encode())
        h.update(meta)
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def derived_key(self, name: str, inputs: bytes) -> str:
        """The key of a result that depends only on `inputs` (the bytes of everything it reads) and the generator."""
        h = hashlib.sha256(f"{self.environment}\0{name}\0".encode())
        h.update(inputs)
        return h.hexdigest()

    def get(self, key: str) -> Entry | None:
        """A fresh copy of the entry for `key`, or None."""
        blob = self.entries.get(key)
        if blob is None:
            return None
        try:
            entry = pickle.loads(blob)
        except Exception:  # an unreadable entry is parsed again
            return None
        self.used[key] = blob
        return entry

    def get_derived(self, key: str) -> Any:
        """A fresh copy of the result kept under a `derived_key`, or None."""
        return self.get(key)

    def put_derived(self, key: str, value: Any) -> None:
        """Keep a result under its `derived_key` (pickled now)."""
        self.used[key] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def put(self, key: str, entry: Entry) -> None:
        """Keep `entry` (pickled now, so later changes to the document do not reach the cache)."""
        self.used[key] = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)

    def save(self) -> None:
        """Write the entries this run used or made; a cache that cannot be written only costs time next run."""
        if self.used == self.entries:
            return
        record = {"environment": self.environment, "entries": self.used}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            temporary.write_bytes(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
            temporary.replace(self.path)
        except OSError:
            pass
