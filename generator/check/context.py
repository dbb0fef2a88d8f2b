"""What the meaning checks share: every kind's documents, what earlier checks learned, and the problems found.

The checks of each spec file kind (semantics.py, stability.py, conformance.py, upstream.py, accepted.py, and the
name check in identifiers.py) receive one `CheckState`; the table in kinds.py runs them in order, so a later check
reads what an earlier one set here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic
from ..model import spec as model
from ..read.loader import DataPath, Document

if TYPE_CHECKING:
    from ..read.parsecache import ParseCache


class CheckState:
    """The documents being checked and everything the checks have learned about them so far."""

    def __init__(self, docs: dict[str, list[Document]]) -> None:
        self.docs = docs
        self.classes_doc = docs["classes"][0]
        self.method_docs = docs.get("methods", [])
        self.type_docs = docs.get("types", [])
        self.example_docs = docs.get("examples", [])
        # Files that parsed but failed their structure check, by kind: only partial checks read them.
        self.unsound: dict[str, list[Document]] = {}
        self.file_stems: dict[str, set[str]] = {}  # the file names (without suffix) of every kind, read or not
        self.maybe_types: set[str] = set()  # names a broken types file may define: not called unknown where used
        self.examples: dict[str, model.Example] = {}
        self.diagnostics: list[Diagnostic] = []
        self.types: dict[str, tuple[Document, dict[str, Any]]] = {}
        self.bad_types: set[str] = set()  # types that are not valid JSON Schema: checks that read them skip them
        self.type_refs: dict[str, set[str]] = {}  # the names each sound type's `$ref`s name (set by check_types)
        self.traces_json: str | None = None  # set by the conformance kind's check
        self.differences: tuple[model.UpstreamDifference, ...] = ()  # set by the upstream-differences kind's check
        self.behaviours: tuple[model.UpstreamBehaviour, ...] = ()  # set by the same check
        self.error_codes_listed: set[int] | None = None
        self.memo: ParseCache | None = None  # where a clean outcome of the examples check is kept (pipeline.load_spec)

    def error(self, doc: Document, path: DataPath, code: str, message: str, *, key: bool = False) -> None:
        """Report problem `code` at `path` in `doc` (at the key rather than its value with `key`)."""
        self.diagnostics.append(Diagnostic(doc.locate(path, key=key), code, message))
