"""The journey's steps that change the spec's own facts and shape, and the checks that every output followed.

Each step edits the copy's spec as a maintainer would (text edits, comments kept), chooses what it changes from the
spec's data, and returns what it changed, so that `follows_*` can check the regenerated outputs against it: the
schemas, the three SDK tables, the key vectors, the docs and the runtime's own key check.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from generator.check.semantics import IDEMPOTENCY_KEY_TYPE as KEY_TYPE  # the type the generator reads limits from

if TYPE_CHECKING:
    from tests.journey.test_maintainer_journey import Copy

# The SDK tables that carry the key's maximum, and how each writes it.
KEY_TABLES = {
    "generated/typescript/retry-policy.ts": r"export const IDEMPOTENCY_KEY_MAX_LENGTH = (\d+);",
    "generated/rust/retry_policy.rs": r"pub const IDEMPOTENCY_KEY_MAX_LENGTH: usize = (\d+);",
    "generated/python/acp_v2_schema/retry.py": r"IDEMPOTENCY_KEY_MAX_LENGTH = (\d+)",
}
RUNTIME_KEY_CHECK = """
import sys
from acp_v2_runtime.idempotency import InvalidKey, validate_key
longest = int(sys.argv[1])
assert validate_key("k" * longest) == "k" * longest
try:
    validate_key("k" * (longest + 1))
except InvalidKey:
    print("ok")
"""
# The hand-written key page as the site's build fills it (docs_hooks.py), printed.
DOCS_KEY_PAGE = """
from pathlib import Path
import docs_hooks
print(docs_hooks.fill_spec_facts(Path("site/idempotency-key.md").read_text(encoding="utf-8"), Path("."), "page"))
"""


def _json(copy: Copy, relative: str) -> Any:
    return json.loads((copy.root / relative).read_text(encoding="utf-8"))


def _types(copy: Copy) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every type of the copy's spec: its file and its schema."""
    found = {}
    for path in sorted((copy.spec / "types").glob("*.yaml")):
        for name, schema in (yaml.safe_load(path.read_text(encoding="utf-8")).get("types") or {}).items():
            found[name] = (path, schema)
    return found


def methods(copy: Copy) -> dict[str, dict[str, Any]]:
    return {
        p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((copy.spec / "methods").glob("*.yaml"))
    }


def code(copy: Copy) -> str:
    """The repository's Python code, where a name a step changes must not be written (the maintainer's to fix)."""
    return "\n".join(
        p.read_text(encoding="utf-8")
        for folder in ("generator", "runtime", "tests", "bench")
        for p in (copy.root / folder).rglob("*.py")
    )


def paste_unlisted(copy: Copy, reason: str, *, expect: tuple[str, ...]) -> list[str]:
    """Generate, then paste each NOT LISTED line the audit prints (README step 4) with `reason`."""
    copy.generator("generate")
    audit = copy.generator("audit", expect=1)
    unlisted = [line.removeprefix("NOT LISTED").strip() for line in audit.stdout.splitlines() if line[:3] == "NOT"]
    assert unlisted and all(any(word in line for word in expect) for line in unlisted), audit.stdout
    pasted = "".join(f"  - difference: {json.dumps(line)}\n    reason: {reason}\n" for line in unlisted)
    copy.edit("spec/upstream-differences.yaml", lambda text: text.rstrip("\n") + "\n" + pasted)
    return unlisted


def accept_named_breaks(copy: Copy, version: str, reason: str) -> list[str]:
    """Run the gate, which fails naming each break, and accept each as it is named; the subjects accepted."""
    copy.generator("generate")
    gate = copy.generator("diff", expect=1)
    named = re.findall(r"breaking\[([a-z-]+)\]: ([^:\s]+): ", gate.stdout)
    assert named, gate.stdout + gate.stderr
    entries = "".join(
        f"  - rule: {rule}\n    subject: {json.dumps(subject)}\n    version: {version}\n    reason: {reason}\n"
        for rule, subject in named
    )
    copy.edit("spec/accepted-breaks.yaml", lambda text: text.rstrip("\n") + "\n" + entries)  # below `accepted:`
    return [subject for _, subject in named]


# -- the key's maximum length --------------------------------------------------------------------------------------
def change_key_maximum(copy: Copy) -> tuple[int, int]:
    """The key type's maxLength halved (as a revision of the RFD may change it): (old, new)."""
    path, schema = _types(copy)[KEY_TYPE]
    old = schema["maxLength"]
    new = max(schema.get("minLength", 0) + 1, old // 2)
    relative = path.relative_to(copy.root).as_posix()
    copy.edit(relative, lambda text: re.sub(rf"(\n    maxLength: ){old}\n", rf"\g<1>{new}\n", text, count=1))
    return old, new


def follows_key_maximum(copy: Copy, longest: int) -> None:
    """Every output carries the new maximum, and the runtime's key check takes it."""
    for name in ("generated/schema/schema.json", "generated/schema/schema.unstable.json"):
        assert _json(copy, name)["$defs"][KEY_TYPE]["maxLength"] == longest, name
    for name, pattern in KEY_TABLES.items():
        found = re.search(pattern, (copy.root / name).read_text(encoding="utf-8"))
        assert found and int(found.group(1)) == longest, name
    vectors = _json(copy, "generated/conformance/idempotency-key.json")
    assert vectors["maxLength"] == longest
    at = {v["valid"] for v in vectors["vectors"] if v.get("codePoints") == longest and v.get("wellFormed")}
    over = {v["reason"] for v in vectors["vectors"] if v.get("codePoints") == longest + 1}
    assert at == {True} and over == {"too-long"}, (at, over)
    page = (copy.root / "site" / "reference" / "types" / "idempotency.md").read_text(encoding="utf-8")
    assert f" {longest} characters" in page, page[:2000]
    done = copy.run(sys.executable, "-c", RUNTIME_KEY_CHECK, str(longest))
    assert done.stdout.strip() == "ok", done.stdout + done.stderr
    prose = copy.run(sys.executable, "-c", DOCS_KEY_PAGE).stdout
    assert f"to {longest} characters" in prose and f"made of {longest} emoji" in prose, prose[:2000]


# -- a method's params type renamed ----------------------------------------------------------------------------------
def rename_a_params_type(copy: Copy) -> tuple[str, str, str]:
    """Rename the params type of a stable method everywhere the spec names it: (method, old, new).

    A union of inline variants is chosen first (the published form writes it differently), then any other; either
    is named in no code of the repository."""
    types, written = _types(copy), code(copy)
    candidates = [
        (m["method"], m["params"])
        for m in methods(copy).values()
        if m["stability"] == "stable" and m.get("params") in types and not re.search(rf"\b{m['params']}\b", written)
    ]
    if not candidates:
        pytest.skip("every stable method's params type is named in code")
    candidates.sort(key=lambda c: ("anyOf" not in types[c[1]][1] and "oneOf" not in types[c[1]][1], c))
    method, old = candidates[0]
    new = f"{old}V2"
    for path in copy.spec.rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        if re.search(rf"\b{old}\b", text):
            path.write_text(re.sub(rf"\b{old}\b", new, text), encoding="utf-8")
    paste_unlisted(copy, f"{old} is called {new} here; the wire is the same.", expect=(old, new))
    accepted = accept_named_breaks(copy, "0.1.0", f"{old} is called {new} here; the wire is the same.")
    assert any(old in subject for subject in accepted), accepted
    return method, old, new


def follows_a_params_type(copy: Copy, method: str, old: str, new: str) -> None:
    """The schemas, the policy and the Python models name the new type, and none the old one."""
    schema = _json(copy, "generated/schema/schema.json")["$defs"]
    assert new in schema and old not in schema
    policy = (copy.root / "generated" / "retry-policy.json").read_text(encoding="utf-8")
    assert method in policy
    models = "\n".join(p.read_text(encoding="utf-8") for p in (copy.root / "generated" / "python").rglob("*.py"))
    assert re.search(rf"^(class )?{new}\b", models, re.MULTILINE) and not re.search(rf"\b{old}\b", models)


# -- an optional field, with its example ---------------------------------------------------------------------------
FIELD, FIELD_VALUE = "maintainerNote", "kept with the request"
FIELD_SCHEMA = f"      {FIELD}:\n        description: A note the Client keeps with the request.\n        type: string\n"


def add_an_optional_field(copy: Copy) -> tuple[str, str]:
    """An optional string field added to a stable method's params (an object), and shown in its worked example."""
    types = _types(copy)
    for name, method in methods(copy).items():
        params = method.get("params")
        example = copy.spec / "examples" / name
        if method["stability"] != "stable" or params not in types or not example.is_file():
            continue
        path, schema = types[params]
        text = example.read_text(encoding="utf-8")
        if "properties" not in schema or FIELD in schema["properties"] or "    params:\n      " not in text:
            continue
        relative = path.relative_to(copy.root).as_posix()

        def add(text: str, params: str = params) -> str:
            at = text.index("\n    properties:\n", text.index(f"\n  {params}:\n")) + len("\n    properties:\n")
            return text[:at] + FIELD_SCHEMA + text[at:]

        copy.edit(relative, add)
        copy.edit(
            f"spec/examples/{name}",
            lambda text: text.replace("    params:\n      ", f"    params:\n      {FIELD}: {FIELD_VALUE}\n      ", 1),
        )
        paste_unlisted(copy, f"{FIELD} is ours, an optional field ACP does not have.", expect=(FIELD,))
        return method["method"], params
    pytest.skip("no stable method with object params has a worked example")


def follows_an_optional_field(copy: Copy, method: str, params: str) -> None:
    schema = _json(copy, "generated/schema/schema.json")["$defs"][params]
    assert FIELD in schema["properties"] and FIELD not in schema.get("required", [])
    models = "\n".join(p.read_text(encoding="utf-8") for p in (copy.root / "generated" / "python").rglob("*.py"))
    assert FIELD in models
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (copy.root / "site" / "reference").rglob("*.md"))
    assert FIELD_VALUE in pages, f"the worked example of {method} does not show the new field"


# -- an unstable method removed --------------------------------------------------------------------------------------
def remove_an_unstable_method(copy: Copy) -> tuple[str, str]:
    """An unstable request method named in no code: its file, its example and its place in the envelopes' order."""
    written = code(copy)
    for name, method in methods(copy).items():
        if method["stability"] != "unstable" or method["kind"] != "request":
            continue
        if re.search(rf"['\"]{re.escape(method['method'])}['\"]", written):
            continue
        (copy.spec / "methods" / name).unlink()
        (copy.spec / "examples" / name).unlink(missing_ok=True)
        order = re.compile(rf"\n        - {re.escape(method['method'])}\n")
        copy.edit("spec/types/envelopes.yaml", lambda text, order=order: order.sub("\n", text, count=1))
        paste_unlisted(copy, f"{method['method']} is left out of this spec for now.", expect=(method["method"],))
        return method["method"], name.removesuffix(".yaml")
    pytest.skip("every unstable request method is named in code")


def follows_a_removed_method(copy: Copy, method: str, slug: str) -> None:
    policy = (copy.root / "generated" / "retry-policy.json").read_text(encoding="utf-8")
    assert f'"{method}"' not in policy
    for name in KEY_TABLES:
        assert f'"{method}"' not in (copy.root / name).read_text(encoding="utf-8"), name
    unstable = json.dumps(_json(copy, "generated/schema/schema.unstable.json"))
    assert f'"{method}"' not in unstable
    assert not (copy.root / "site" / "reference" / "methods" / f"{slug}.md").exists()


# -- a new type family file ------------------------------------------------------------------------------------------
FAMILY = """# yaml-language-server: $schema=../meta/types.schema.json
title: Bookmarks
description: Places in a session that a user marked to come back to.
types:
  SessionBookmark:
    description: One marked place in a session.
    x-stability: unstable
    type: object
    properties:
      messageId:
        description: The message the bookmark points at.
        type: string
      label:
        description: What the user called it.
        type: string
    required: [messageId]
"""


def add_a_type_family(copy: Copy) -> str:
    (copy.spec / "types" / "bookmarks.yaml").write_text(FAMILY, encoding="utf-8")
    paste_unlisted(copy, "SessionBookmark is ours; ACP has no such type.", expect=("SessionBookmark",))
    return "bookmarks"


def follows_a_type_family(copy: Copy, family: str) -> None:
    assert "SessionBookmark" in _json(copy, "generated/schema/schema.unstable.json")["$defs"]
    page = copy.root / "site" / "reference" / "types" / f"{family}.md"
    assert page.is_file() and "SessionBookmark" in page.read_text(encoding="utf-8")
    index = (copy.root / "site" / "reference" / "types" / "index.md").read_text(encoding="utf-8")
    assert "Bookmarks" in index
