"""The spec-maintainers page's worked method is one a maintainer could add: a name ACP does not have, in a method file
the meta-schema accepts. A maintainer who follows the page adds it to the spec; then it is listed as ours in
spec/upstream-differences.yaml, as the page's step 5 says, and every check stays green."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator

from tests.support import ROOT

PAGE = ROOT / "site" / "spec-maintainers.md"


def _example() -> dict:
    text = PAGE.read_text("utf-8")
    (block,) = re.findall(r"( *)```yaml\n(\1# yaml-language-server: \$schema=\.\./meta/method\..*?)\1```", text, re.S)
    indent, body = block
    return yaml.safe_load(re.sub(rf"^{indent}", "", body, flags=re.M))


def _new_or_listed_as_ours(spec: Path, example: dict) -> None:
    """The page's method is not in `spec`, or it is (the page was followed) and listed as ours, not ACP's."""
    existing = {yaml.safe_load(path.read_text("utf-8"))["method"] for path in (spec / "methods").glob("*.yaml")}
    if example["method"] in existing:
        listing = yaml.safe_load((spec / "upstream-differences.yaml").read_text("utf-8"))["differences"]
        ours = f"method {example['method']} ({example['kind']}): here, but not in the published schema"
        assert any(d["difference"].startswith(ours) for d in listing), example["method"]


def test_the_example_method_is_new_and_a_valid_method_file() -> None:
    example = _example()
    _new_or_listed_as_ours(ROOT / "spec", example)
    meta = json.loads((ROOT / "spec" / "meta" / "method.schema.json").read_text("utf-8"))
    # The page shows the fields a maintainer writes first; params and result follow in step 3.
    errors = [e.message for e in Draft202012Validator(meta).iter_errors(example) if e.validator != "required"]
    assert errors == []


def test_following_the_page_keeps_the_spec_tests_green(tmp_path: Path) -> None:
    """The page's method added as the page says (its files, and its listing as ours): this test and the method
    workflow's, which then adds its fixture under a name the spec does not have, both still hold."""
    from tests.upstream.test_method_workflow import FILES, WORDS, _free_words

    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    example = _example()
    (spec / "methods" / "session-pin.yaml").write_text((FILES / "session-pin.yaml").read_text("utf-8"), "utf-8")
    assert yaml.safe_load((spec / "methods" / "session-pin.yaml").read_text("utf-8"))["method"] == example["method"]
    listing = spec / "upstream-differences.yaml"
    line = f"method {example['method']} ({example['kind']}): here, but not in the published schema"
    listing.write_text(
        listing.read_text("utf-8") + f'  - difference: "{line} [in schema.unstable.json only]"\n    reason: Ours.\n',
        "utf-8",
    )
    _new_or_listed_as_ours(spec, example)
    words = _free_words(spec)
    assert words != WORDS and f"session/{words[-1]}" != example["method"]
