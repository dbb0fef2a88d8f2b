"""A maintainer's first method, added exactly as the README's "Adding or changing a method" says, goes through.

The files a maintainer would write are in tests/fixtures/workflow/: a method file, its types, a worked example. The
steps: generate (which names a missing example), then the audit names every difference from the published schema,
each is listed in spec/upstream-differences.yaml word for word with a reason, and the audit and the drift check pass.
A maintainer who followed the page adds session/pin to the spec itself: the test then adds the same files under a
name the spec does not have yet, so that following the page keeps `make quick` green.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.support import ROOT, run_generator

FILES = ROOT / "tests" / "fixtures" / "workflow"
# The fixture's words, and the words of the names tried when the spec has the fixture's method already.
WORDS = ("Pinning", "pinned", "Pin", "pin")
RENAMES = (WORDS, ("Starring", "starred", "Star", "star"), ("Flagging", "flagged", "Flag", "flag"))


def _free_words(spec: Path) -> tuple[str, ...]:
    """The first set of words whose method (session/<word>) the spec does not define."""
    taken = {yaml.safe_load(p.read_text("utf-8"))["method"] for p in (spec / "methods").glob("*.yaml")}
    return next(words for words in RENAMES if f"session/{words[-1]}" not in taken)


def _place(source: str, target: Path, words: tuple[str, ...]) -> None:
    text = (FILES / source).read_text(encoding="utf-8")
    for old, new in zip(WORDS, words, strict=True):
        text = text.replace(old, new)
    target.write_text(text, encoding="utf-8")


def test_a_new_method_goes_through_every_step(tmp_path: Path, upstream) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    args = ("--root", str(tmp_path), "--spec", str(spec))
    words = _free_words(spec)
    method, slug = f"session/{words[-1]}", f"session-{words[-1]}"
    # step 1 and 2: the method file and its types; without the example, generate says what is missing
    _place("session-pin.yaml", spec / "methods" / f"{slug}.yaml", words)
    _place("pins.yaml", spec / "types" / f"{words[-1]}s.yaml", words)
    missing = run_generator("generate", *args)
    assert missing.status == 2 and "error[missing-example]" in missing.err, missing.err
    assert f"add spec/examples/{slug}.yaml" in missing.err
    # step 3: the worked example
    _place("session-pin.example.yaml", spec / "examples" / f"{slug}.yaml", words)
    done = run_generator("generate", *args)
    assert done.status == 0, done.err
    # step 4: the audit names each difference the new method makes; each is listed with a reason
    audit = ("audit", str(upstream.unstable_path), "--stable", str(upstream.stable_path), *args)
    first = run_generator(*audit)
    assert first.status == 1
    unlisted = [line.removeprefix("NOT LISTED").strip() for line in first.out.splitlines() if line.startswith("NOT")]
    assert any(method in line for line in unlisted), first.out
    differences = spec / "upstream-differences.yaml"
    listing = "".join(
        f'  - difference: "{line}"\n    reason: {method} is ours; ACP has no such method.\n'
        for line in dict.fromkeys(unlisted)
    )
    differences.write_text(differences.read_text(encoding="utf-8") + listing, encoding="utf-8")
    second = run_generator(*audit)
    assert second.status == 0, second.out
    # step 5 and 6: generate again (the differences page) and the drift check CI runs passes
    assert run_generator("generate", *args).status == 0
    check = run_generator("check", *args)
    assert check.status == 0, check.out + check.err
