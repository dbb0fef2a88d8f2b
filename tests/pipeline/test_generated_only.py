"""generated/ holds only what the generator writes, each file marked; hand-written runtime code lives once."""

from __future__ import annotations

from generator.render.markers import NOTICE
from tests.support import ROOT

GENERATED = ROOT / "generated"
RUNTIME = ROOT / "runtime" / "acp_v2_runtime"


def test_every_generated_file_carries_the_marker():
    unmarked = []
    for path in sorted(GENERATED.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.name == "LICENSE":
            continue  # the license is the repository's own text, copied verbatim (a license carries no header)
        text = path.read_text(encoding="utf-8")
        if text and NOTICE not in text[:1000]:  # py.typed is empty by design
            unmarked.append(path.relative_to(ROOT).as_posix())
    assert not unmarked, f"files in generated/ without the generated marker: {unmarked}"


def test_runtime_modules_are_not_copied_into_the_generated_package():
    runtime = {p.relative_to(RUNTIME).as_posix() for p in RUNTIME.rglob("*.py")}
    package = GENERATED / "python" / "acp_v2_schema"
    copied = sorted(rel for rel in runtime if rel != "__init__.py" and (package / rel).exists())
    assert not copied, f"runtime modules that also exist in the generated package: {copied}"
