"""Names from the spec that become file names or symbols in some output, checked together at validation time.

A spec name reaches several languages at once: a failure kind is a Python enum member and a Rust enum variant, a
method is a page, a file name and a Python constant, a type is a Python class, a type file is a Python module and
a page, an error code's title is a Python enum member. Each
target below says how a name is spelled there and what that spelling must not be. Two names that become the same
spelling in any target (`no-response` and `no--response` are both `NoResponse` in Rust; `zz/a_b` and `zz/a-b` are
both the page `zz-a-b.md`) and a spelling that is reserved there (`Self` in Rust, `None` or `BaseModel` in the
models module) are diagnostics, so `generate` never writes output that does not build or that loses a file.
(TypeScript receives every name as a quoted string, so no TypeScript spelling can collide or be reserved.)
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model import naming
from ..read.loader import DataPath, Document

if TYPE_CHECKING:
    from .context import CheckState

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
# Rust: strict and reserved keywords; only `Self` can come out of PascalCase, the rest guard other spellings.
_RUST_KEYWORDS = (
    "as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move "
    "mut pub ref return self Self static struct super trait true type unsafe use where while abstract become box do "
    "final macro override priv typeof unsized virtual yield try gen"
)
RUST_RESERVED = frozenset(_RUST_KEYWORDS.split())
# Names every generated models module imports or that Python itself fixes; a type called so would shadow them.
MODELS_RESERVED = frozenset(
    {"BaseModel", "ConfigDict", "Field", "RootModel", "TypeAliasType", "Annotated", "Any", "Literal", "Optional"}
    | {"Union", "Enum", "AwareDatetime", "AnyUrl", "List", "Dict"}
    | set(keyword.kwlist)
)
# Pages that the renderers write beside the generated ones in the same folder.
PAGE_RESERVED = frozenset({"index"})
# Module-level names of the generated `protocol` module (templates/protocol.py.j2) beside the method constants.
PROTOCOL_RESERVED = frozenset({"METHOD_NAMES", "EXTENSION_PREFIX", "MethodName", "KnownErrorCode"})


@dataclass(frozen=True)
class Target:
    """One place where a spec name turns into a symbol or file name."""

    what: str
    spell: Callable[[str], str]
    valid: re.Pattern[str]
    reserved: frozenset[str] = frozenset()


PYTHON_ENUM_MEMBER = Target("Python enum member", naming.constant_case, _IDENTIFIER, frozenset(keyword.kwlist))
RUST_VARIANT = Target("Rust enum variant", naming.pascal_case, _IDENTIFIER, RUST_RESERVED)
METHOD_PAGE = Target("method page and example file", lambda slug: slug, _SLUG, PAGE_RESERVED)
PYTHON_MODEL = Target("Python model class", lambda name: name, _IDENTIFIER, MODELS_RESERVED)
PYTHON_FIELD = Target("Python model field", naming.snake_case, _IDENTIFIER)
FAMILY_MODULE = Target("Python models module", lambda name: name, _IDENTIFIER, frozenset(keyword.kwlist))
FAMILY_PAGE = Target("type reference page", lambda name: name.lower(), _SLUG, PAGE_RESERVED)
METHOD_CONSTANT = Target("Python method-name constant", naming.method_constant, _IDENTIFIER, PROTOCOL_RESERVED)
ERROR_CODE_MEMBER = Target("Python error-code member", naming.title_constant, _IDENTIFIER, frozenset(keyword.kwlist))

# Which targets each group of names reaches.
VOCABULARY_TARGETS = (PYTHON_ENUM_MEMBER, RUST_VARIANT)


@dataclass(frozen=True)
class Name:
    """A spec name with where it was written."""

    text: str
    doc: Document
    path: DataPath
    key: bool = False
    spelling: str | None = None  # when the spelling is computed from more than the name (a method's slug)


def check(checker: CheckState) -> None:
    """Every collision and reserved spelling of every name, in every target, as diagnostics."""
    data = checker.classes_doc.data
    for section in ("failureKinds", "decisions", "classes"):
        names = [Name(item["name"], checker.classes_doc, (section, i, "name")) for i, item in enumerate(data[section])]
        for target in VOCABULARY_TARGETS:
            _check_group(checker, names, target, f"{section} names")
    methods = [d.data["method"] for d in checker.method_docs]
    slugs = [
        Name(
            f"{d.data['kind']} {d.data['method']}",
            d,
            ("method",),
            spelling=naming.method_slug(d.data["method"], d.data["kind"], has_twin=methods.count(d.data["method"]) > 1),
        )
        for d in checker.method_docs
    ]
    _check_group(checker, slugs, METHOD_PAGE, "method entries")
    first_of_name = {d.data["method"]: d for d in reversed(checker.method_docs)}
    names = [Name(method, doc, ("method",)) for method, doc in sorted(first_of_name.items())]
    _check_group(checker, names, METHOD_CONSTANT, "method names")
    _check_error_titles(checker)
    types = [Name(name, doc, ("types", name), key=True) for name, (doc, _) in checker.types.items()]
    _check_group(checker, types, PYTHON_MODEL, "types")
    for name, (doc, schema) in checker.types.items():
        props = schema.get("properties") if name not in checker.bad_types else None
        if isinstance(props, dict):
            fields = [Name(p, doc, ("types", name, "properties", p), key=True) for p in props]
            _check_group(checker, fields, PYTHON_FIELD, f"properties of {name}", reserved=False)
    families = [Name(_family(doc), doc, ()) for doc in checker.type_docs]
    for target in (FAMILY_MODULE, FAMILY_PAGE):
        _check_group(checker, families, target, "type files")


def _check_error_titles(checker: CheckState) -> None:
    """The titled rows of the error-code table (spec/retry-classes.yaml) become members of one Python enum."""
    table = checker.classes_doc.data.get("errorCodes")
    rows = table.get("codes") if isinstance(table, dict) else None
    if not isinstance(rows, list):
        return
    titles = [
        Name(row["title"], checker.classes_doc, ("errorCodes", "codes", i, "title"))
        for i, row in enumerate(rows)
        if isinstance(row, dict) and "code" in row and isinstance(row.get("title"), str)
    ]
    _check_group(checker, titles, ERROR_CODE_MEMBER, "error code titles", same_text=True)


def _family(doc: Document) -> str:
    return doc.path.stem


def _check_group(
    checker: CheckState,
    names: list[Name],
    target: Target,
    group: str,
    *,
    reserved: bool = True,
    same_text: bool = False,
) -> None:
    """Names of one group must spell validly, unreserved and distinctly in `target`.

    Two equal names are left to the check that owns them (duplicate-method, duplicate-name...) unless `same_text`.
    """
    first: dict[str, Name] = {}
    for name in names:
        spelling = name.spelling if name.spelling is not None else target.spell(name.text)
        if not target.valid.match(spelling):
            checker.error(
                name.doc,
                name.path,
                "reserved-name",
                f"{name.text!r} becomes {spelling!r}, which is not a valid {target.what} name",
                key=name.key,
            )
            continue
        if reserved and spelling in target.reserved:
            checker.error(
                name.doc,
                name.path,
                "reserved-name",
                f"{name.text!r} becomes {spelling!r}, which is reserved as a {target.what} name",
                key=name.key,
            )
            continue
        other = first.setdefault(spelling, name)
        if other is not name and (same_text or other.text != name.text):
            where = other.doc.display if other.doc is not name.doc else "the same file"
            checker.error(
                name.doc,
                name.path,
                "name-collision",
                f"{name.text!r} and {other.text!r} ({where}) both become the {target.what} {spelling!r} among {group}",
                key=name.key,
            )
