"""generated/python: the pip-installable `acp-v2-schema` distribution (import `acp_v2_schema`).

Models come from datamodel-code-generator, called as a library on the unstable schema bundle (on its skeleton:
described.py), in a worker process started before the other renderers run (codegen.py); they are split into one
module per type family (`acp_v2_schema/models/<family>.py`, after `spec/types/<family>.yaml`) behind
a package `__init__` that imports a family on first access; the retry module and the packaging files come from
Jinja templates. All Python is formatted with ruff before it is returned, so that `check` compares formatted text
with formatted text.
"""

from __future__ import annotations

import ast
import json
import keyword
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from ... import paths
from ...model import class_names, refinements, unions
from ...model.spec import REF_PREFIX, Spec
from ..incremental import memoized_each
from ..markers import json_text, markdown_header, python_header
from ..schema import bundles as schema
from ..sdk import policy
from ..templates import render_output
from . import codegen, described, lenient_rules, open_unions, protocol
from .models_split import split_models

PACKAGE_VERSION = "0.1.0"
AUTHORS = "The ACP v2 retry toolchain contributors"
# Where the protocol itself lives; this toolchain's own repository has no public address to name yet.
PROJECT_URLS = (
    ("Homepage", "https://agentclientprotocol.com/"),
    ("Protocol schema", "https://github.com/agentclientprotocol/agent-client-protocol"),
)
CLASSIFIERS = (
    "Development Status :: 3 - Alpha",
    "Intended Audience :: Developers",
    "Operating System :: OS Independent",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.10",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Topic :: Software Development :: Libraries",
    "Typing :: Typed",
)
# The repository's license file, shipped verbatim in the distribution (a license text carries no generated header).
LICENSE_FILE = Path(__file__).resolve().parents[3] / "LICENSE"
BASE = paths.PYTHON_DIST
PACKAGE = paths.PYTHON_PACKAGE
MODELS = paths.PYTHON_MODELS
TARGET_PYTHON = codegen.TARGET_PYTHON
LINE_LENGTH = 100
# The base class of every model (see its docstring), bound in each family module as `_Model`.
BASE_MODULE = f"{MODELS}/_base.py"
_BASE_IMPORT = f"from .{BASE_MODULE.rsplit('/', 1)[-1].removesuffix('.py')} import Meta as _Meta, Model as _Model\n"
# The annotation of the `_meta` field, which most models have: written once, in the base module (as `Meta`), and
# named by every field, it is made once instead of once a model (a tenth of the time that creating the classes takes).
_META_ANNOTATION = 'Annotated[dict[str, Any] | None, Field(alias="_meta")]'
_FUTURE_ANNOTATIONS = "from __future__ import annotations\n"
# A throwaway name for the bundle's root, which has no meaning of its own; its alias is cut from the models.
_ROOT_TITLE = "AcpV2SchemaBundleRoot"
_POPULATE_BY_NAME = "        populate_by_name=True,\n"
# A model's `model_config`, as the code generator writes it (one setting a line).
_CONFIG_BLOCK = re.compile(r"^    model_config = ConfigDict\(\n((?:        .*\n)*?)    \)\n", re.M)


def render(spec: Spec) -> dict[str, str]:
    header = python_header()
    files = {
        f"{BASE}/pyproject.toml": render_output(
            f"{BASE}/pyproject.toml",
            header=header,
            version=PACKAGE_VERSION,
            authors=AUTHORS,
            classifiers=CLASSIFIERS,
            urls=PROJECT_URLS,
        ),
        f"{BASE}/LICENSE": LICENSE_FILE.read_text(encoding="utf-8"),
        f"{BASE}/README.md": render_output(
            f"{BASE}/README.md",
            header=markdown_header("spec/"),
            spec=spec,
            version=PACKAGE_VERSION,
            max_salvages=lenient_rules.MAX_SALVAGES,
        ),
        f"{PACKAGE}/py.typed": "",
        f"{PACKAGE}/__init__.py": render_output(f"{PACKAGE}/__init__.py", header=header, version=PACKAGE_VERSION),
        paths.PYTHON_RETRY: render_output(paths.PYTHON_RETRY, header=header, spec=spec),
        paths.PYTHON_PROTOCOL: protocol.render(spec, header),
        paths.PYTHON_READER: render_output(paths.PYTHON_READER, header=header, spec=spec),
        f"{PACKAGE}/data/schema.json": schema.bundle_text(spec, unstable=False),
        f"{PACKAGE}/data/schema.unstable.json": schema.bundle_text(spec, unstable=True),
        f"{PACKAGE}/data/retry-policy.json": json_text(policy.policy(spec)),
    }
    files.update(models_files(spec))
    python = {path: text for path, text in files.items() if path.endswith(".py")}
    files.update(format_python(python))
    return files


def models_files(
    spec: Spec, *, open_unions_pass: bool = True, keep_unknown_fields: bool = True, lenient: bool = True
) -> dict[str, str]:
    """The `models` package: one module per type family and an `__init__` that imports them on first access.

    `open_unions_pass=False` leaves the unions closed, as the code generator writes them, and
    `keep_unknown_fields=False` leaves the models dropping the fields they do not know: the benchmark measures what
    opening the unions costs against the closed form, and what both changes cost against the form before them.
    `lenient=False` leaves out the lenient second read of a refused message (models/_salvage.py): the benchmark
    measures what it costs a message that needs no salvage.
    """
    families = {t.name: PurePosixPath(t.source).stem for t in spec.types}
    for family in sorted(set(families.values())):
        if not family.isidentifier() or keyword.iskeyword(family):
            raise RuntimeError(f"spec/types/{family}.yaml: the file name must be a Python identifier (a module name)")
    source = models_source(spec)
    if keep_unknown_fields:
        source = open_unions.keep_unknown_fields(source)
    if open_unions_pass:
        source = open_unions.open_models(source, spec)
    types = {t.name: t.schema for t in spec.types}
    source = class_names.public_names(source, _codegen_document(spec), types)
    source, config = _shared_config(_wire_names_only(source))
    modules, owners = split_models(_on_base_model(source), families)
    class_names.check(list(owners), types)
    files = {f"{MODELS}/{family}.py": eager_annotations(text) for family, text in modules.items()}
    files[paths.PYTHON_OPEN_UNIONS] = open_unions.support_module(python_header())
    rules = lenient_rules.rules(spec, source)
    files[paths.PYTHON_SALVAGE] = render_output(
        paths.PYTHON_SALVAGE,
        header=python_header(),
        rules=rules,
        max_salvages=lenient_rules.MAX_SALVAGES,
        flags=", ".join(
            str(f)
            for f in (
                lenient_rules.ON_ERROR,
                lenient_rules.SKIP_INVALID_ITEMS,
                lenient_rules.ON_NULL,
                lenient_rules.REQUIRED,
            )
        ),
    )
    files[BASE_MODULE] = render_output(
        BASE_MODULE,
        header=python_header(),
        config=config,
        meta=_META_ANNOTATION,
        lenient=lenient,
        skip_arrays={
            name: sorted(wire for wire, flags in fields.items() if flags & lenient_rules.SKIP_INVALID_ITEMS)
            for name, fields in rules.items()
            if any(flags & lenient_rules.SKIP_INVALID_ITEMS for flags in fields.values())
        },
    )
    names_by_family: dict[str, list[str]] = {}
    for name, family in sorted(owners.items()):
        names_by_family.setdefault(family, []).append(name)
    files[f"{MODELS}/__init__.py"] = render_output(
        f"{MODELS}/__init__.py",
        header=python_header(),
        owners=dict(sorted(owners.items())),
        families=dict(sorted(names_by_family.items())),
    )
    return files


def models_source(spec: Spec, *, shortcut: bool = True) -> str:
    """Pydantic v2 models for every spec type, made by datamodel-code-generator.

    The library runs on the schema's skeleton, its descriptions put back afterwards (render/python/described.py), so a
    run that only changed descriptions reuses the last run's output; `shortcut=False` runs it on the document
    itself (the tests compare the two). When `models_started` had a worker process run it, its output is used.
    """
    document = _codegen_document(spec)
    source = described.models(document, _models_of) if shortcut else _generated(json.dumps(document))
    return _defer_build(_drop_root(source))


@contextmanager
def models_started(spec: Spec) -> Iterator[None]:
    """The code generator at work on `spec`'s schema in a worker process (render/python/codegen.py) while the block runs
    the other renderers, unless the memo holds its output; `render` takes the worker's models. A worker whose
    models were not taken is ended on leaving the block."""
    try:
        described.begin(_codegen_document(spec), lambda text: codegen.begin(text, python_header()))
        yield
    finally:
        codegen.stop()


# The last document made, with its model object (the same check as schema.bundle_text's): `models_started` and
# `models_source` both need it.
_DOCUMENT: list[tuple[Spec, dict[str, Any]]] = []


def _codegen_document(spec: Spec) -> dict[str, Any]:
    """The JSON Schema the code generator is given for `spec` (not to be changed: it is kept for the next call)."""
    for made, document in _DOCUMENT:
        if made is spec:
            return document
    # The code generator takes the closed unions (open_unions adds each union's fallback variant afterwards) and
    # refined objects flattened into one model each.
    # Union branches the spec names get types of their own, so the models take those names (model/class_names.py).
    document = refinements.flattened(unions.closed(schema.bundle(spec, unstable=True)), REF_PREFIX)
    document = class_names.named_branches(document)
    _bound_integer_formats(document)
    document["title"] = _ROOT_TITLE
    document.pop("description", None)
    _DOCUMENT[:] = [(spec, document)]
    return document


# The integer formats of the spec (and of upstream's Rust types) and the values each can hold. JSON Schema treats
# `format` as an annotation, so schema.json keeps it as it is; the models enforce it, as upstream's types do (an id of
# 2**63 is not a RequestId there either).
INTEGER_FORMATS = {
    **{f"int{bits}": (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for bits in (8, 16, 32, 64)},
    **{f"uint{bits}": (0, 2**bits - 1) for bits in (8, 16, 32, 64)},
}


def _bound_integer_formats(node: Any) -> None:
    """Give every integer schema with a known `format` the bounds of that format (in place), keeping any bound of
    its own that is stricter, so that the code generator writes them into the models."""
    if isinstance(node, list):
        for item in node:
            _bound_integer_formats(item)
        return
    if not isinstance(node, dict):
        return
    kinds = node.get("type")
    bounds = INTEGER_FORMATS.get(node.get("format")) if isinstance(node.get("format"), str) else None
    fixed = "const" in node or "enum" in node  # its values are listed: nothing to bound
    if bounds is not None and not fixed and (kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds)):
        low, high = bounds
        node["minimum"] = max(low, node.get("minimum", low))
        node["maximum"] = min(high, node.get("maximum", high))
    for key, value in node.items():
        if key not in ("const", "default", "enum", "examples", "example"):  # data, not schemas
            _bound_integer_formats(value)


def _models_of(text: str) -> str:
    """The library's models for the JSON Schema `text`: the worker's when it was given `text`, else made here."""
    taken = codegen.take(text)
    return taken if taken is not None else _generated(text)


def _generated(text: str) -> str:
    """The library's models for the JSON Schema `text`, made in this process."""
    return codegen.generate_models(text, python_header())


def _on_base_model(source: str) -> str:
    """Every model derives from the package's base class instead of pydantic's `BaseModel` directly, and names the
    base module's annotation of the `_meta` field instead of writing its own (ruff drops the import where unused)."""
    if "\nfrom pydantic import " not in source:
        raise RuntimeError("the generated models import nothing from pydantic")
    source = re.sub(r"^(class \w+)\(BaseModel\):", r"\1(_Model):", source, flags=re.M)
    source = source.replace(f"field_meta: {_META_ANNOTATION} = None\n", "field_meta: _Meta = None\n")
    return source.replace("\nfrom pydantic import ", "\n" + _BASE_IMPORT + "from pydantic import ", 1)


def eager_annotations(source: str) -> str:
    """A family module whose field annotations are objects, not strings, wherever they can be.

    The code generator writes `from __future__ import annotations`, which makes every annotation a string that
    pydantic must compile and evaluate when it creates the class, and again on first use for those that named
    something not bound yet. Without it, Python evaluates each annotation as the class is created; only an
    annotation that names something bound later in the module (a class further down, the class itself, or the
    other families' modules imported at the end, see models_split) is written as a string, which pydantic
    evaluates on the model's first use, as before.
    """
    if _FUTURE_ANNOTATIONS not in source:
        return source
    source = source.replace(_FUTURE_ANNOTATIONS, "", 1)
    tree = ast.parse(source)
    bound_at: dict[str, int] = {}
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [(a.asname or a.name).split(".", 1)[0] for a in node.names]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            names = []
        for name in names:
            bound_at.setdefault(name, index)
    late: list[ast.expr] = []
    for index, node in enumerate(tree.body):
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and any(
                isinstance(n, ast.Name) and bound_at.get(n.id, -1) >= index for n in ast.walk(statement.annotation)
            ):
                late.append(statement.annotation)
    lines = [line.encode("utf-8") for line in source.splitlines(keepends=True)]  # ast columns count UTF-8 bytes
    for annotation in sorted(late, key=lambda a: (a.lineno, a.col_offset), reverse=True):
        first, last = annotation.lineno - 1, (annotation.end_lineno or annotation.lineno) - 1
        quoted = repr(ast.unparse(annotation)).encode("utf-8")
        lines[first : last + 1] = [
            lines[first][: annotation.col_offset] + quoted + lines[last][annotation.end_col_offset :]
        ]
    return b"".join(lines).decode("utf-8")


def _shared_config(source: str) -> tuple[str, str]:
    """The models without their `model_config`, when every model has the same one, and its arguments for the base
    class (each class's own config costs time as pydantic creates the class and makes its schema).

    When the models' configurations differ, each keeps its own and the base class has `defer_build=True` alone.
    """
    blocks = list(_CONFIG_BLOCK.finditer(source))
    settings = {tuple(sorted(line.strip().rstrip(",") for line in b.group(1).splitlines())) for b in blocks}
    # every model that derives from pydantic's class directly must have one (the others inherit theirs)
    models = [c for c in source.split("\nclass ")[1:] if re.match(r"\w+\(BaseModel\):", c)]
    if len(settings) != 1 or not all(_CONFIG_BLOCK.search(c) for c in models):
        return source, "defer_build=True"
    # A class left without a body would fail the parse that splits the models (not parsed here: that costs time).
    return _CONFIG_BLOCK.sub("", source), ", ".join(settings.pop())


def _wire_names_only(source: str) -> str:
    """The models without `populate_by_name`: JSON is read by the protocol's member names alone.

    The code generator's `allow_population_by_field_name` option is what gives every model its config block (which
    `_defer_build` and `keep_unknown_fields` extend); its setting is taken out here. A member spelled as the
    Python attribute (`session_id`) is then an unknown field, kept as sent; Python code still builds models by
    attribute name, through the base class's `__init__` (models/_base.py).
    """
    return source.replace(_POPULATE_BY_NAME, "")


def _defer_build(source: str) -> str:
    """Build each model's validator on first use, not at import: importing the full ACP schema stays cheap.

    datamodel-code-generator has no option for it, so every model_config it writes gets `defer_build=True`.
    """
    marker = "    model_config = ConfigDict(\n"
    return source.replace(marker, marker + "        defer_build=True,\n")


def _drop_root(source: str) -> str:
    """Remove the statement that defines the bundle's root, which is not a protocol type."""
    lines = source.splitlines(keepends=True)
    # The code generator writes it as a one-line alias; a line that parses on its own is a whole statement, so it
    # goes without parsing the whole module (which costs a few hundredths of a second). Any other form: see below.
    for index, line in enumerate(lines):
        if line.startswith((f"{_ROOT_TITLE} = ", f"{_ROOT_TITLE}: ")):
            try:
                ast.parse(line)
            except SyntaxError:
                break
            del lines[index]
            return "".join(lines)
    for node in ast.parse(source).body:
        targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
        names = {getattr(t, "id", None) for t in targets}
        if _ROOT_TITLE in names or getattr(node, "name", None) == _ROOT_TITLE:
            start = node.lineno - 1
            del lines[start : node.end_lineno]
            break
    return "".join(lines)


def format_python(files: dict[str, str]) -> dict[str, str]:
    """Format Python sources with ruff (isolated from any project settings, so results never depend on them).

    All files go through two ruff runs in total (import cleanup, then formatting), not two per file: each file is
    laid in a folder of its own under a temporary directory, so that ruff sees it as alone, as it would on stdin.
    Its result depends on the file's name and text only, so a file whose text was formatted by the last run is not
    formatted again (generator/render/incremental.py, `memoized_each`).
    """
    return memoized_each("ruff-format", files, _ruff_formatted)


def _ruff_formatted(files: dict[str, str]) -> dict[str, str]:
    if not files:
        return {}
    options = ["--isolated", f"--target-version=py{TARGET_PYTHON.replace('.', '')}", f"--line-length={LINE_LENGTH}"]
    with tempfile.TemporaryDirectory(prefix="acp-ruff-") as tmp:
        placed = {}
        for number, (path, text) in enumerate(sorted(files.items())):
            target = Path(tmp) / f"{number:05d}" / path.rsplit("/", 1)[-1]
            target.parent.mkdir()
            target.write_text(text, encoding="utf-8")
            placed[path] = target
        for args in (["check", "--fix", "--select", "I,F401", "--quiet", "--exit-zero"], ["format", "--quiet"]):
            done = subprocess.run(
                [_ruff(), *args, *options, "--no-cache", "."],
                cwd=tmp,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise RuntimeError(f"ruff {args[0]} failed: {done.stderr.strip()}")
        return {path: target.read_text(encoding="utf-8") for path, target in placed.items()}


@cache
def _ruff() -> str:
    """The ruff binary of the pinned package, run directly: `python -m ruff` starts an interpreter only to find it."""
    from ruff import find_ruff_bin

    return os.fsdecode(find_ruff_bin())
