"""The parse cache: each spec file's parsed document and structure-check result, keyed by the bytes they came from.

Parsing the YAML and checking it against its meta-schema depend only on the file's bytes, the meta-schema's bytes
and the generator itself, so a file whose bytes did not change need not be parsed or checked again. The key hashes
those bytes with the file's name (diagnostics carry it) and the generator's environment (generator/write/cache.py); the
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

from ..diagnostics import Diagnostic
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


class SharedParses(ParseCache):
    """The parsed and structure-checked spec files of one `diff` run, shared by its sides; nothing on disk.

    Two versions of a spec mostly hold the same files byte for byte, and parsing a file and checking its structure
    depend only on its bytes and its meta-schema's (generator/read/parsecache.py), so each such file is parsed once. An
    entry is pickled when it is made, before the meaning checks see it, and each load gets a fresh copy named as
    that side names the file. A file whose parse or structure check found a problem is shared only with a load of
    the very same path (its diagnostics carry the file's name). The meaning checks always run on each side.
    """

    def __init__(self) -> None:  # deliberately not ParseCache's: nothing is read from or written to disk
        self.entries = {}
        self.used = {}
        self._where: dict[str, tuple[str, Path, bytes]] = {}  # key -> (display, path, content digest)
        self._made: dict[bytes, tuple[str, Path, bytes, bool]] = {}  # digest -> (display, path, pickle, clean)
        self._latest: dict[str, str] = {}  # display -> key of the latest load of that file
        self._derived: dict[str, bytes] = {}  # derived_key -> pickled result, shared by both sides

    def key(self, display: str, path: Path, data: bytes, meta: bytes) -> str:
        digest = hashlib.sha256(b"%d\0%b\0%b" % (len(meta), meta, data)).digest()
        key = f"{display}\0{path.as_posix()}\0{digest.hex()}"
        self._where[key] = (display, path, digest)
        self._latest[display] = key
        return key

    def derived_key(self, name: str, inputs: bytes) -> str:
        return hashlib.sha256(b"%b\0%b" % (name.encode(), inputs)).hexdigest()

    def get_derived(self, key: str) -> Any:
        blob = self._derived.get(key)
        return None if blob is None else pickle.loads(blob)

    def put_derived(self, key: str, value: Any) -> None:
        self._derived[key] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def get(self, key: str) -> Entry | None:
        display, path, digest = self._where[key]
        made = self._made.get(digest)
        if made is None or (not made[3] and (made[0], made[1]) != (display, path)):
            return None
        entry: Entry = pickle.loads(made[2])
        if entry[0] is not None:
            entry[0].display, entry[0].path = display, path
        return entry

    def put(self, key: str, entry: Entry) -> None:
        display, path, digest = self._where[key]
        if digest not in self._made or not self._made[digest][3]:
            clean = entry[0] is not None and not entry[1] and not entry[2]
            self._made[digest] = (display, path, pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL), clean)

    def save(self) -> None:
        return

    def document(self, display: str) -> Document | None:
        """A fresh copy of the file named `display` as the latest load parsed it (None if it did not parse)."""
        key = self._latest.get(display)
        entry = self.get(key) if key is not None else None
        return entry[0] if entry is not None else None
