"""The spec-maintainers page's worked method is one a maintainer could add: a name ACP does not have, in a method file
the meta-schema accepts. A maintainer who follows the page adds it to the spec; then it is listed as ours in
spec/upstream-differences.yaml, as the page's step 5 says, and every check stays green."""

from __future__ import annotations

import json
import re

import yaml
from jsonschema import Draft202012Validator

from tests.support import ROOT

PAGE = ROOT / "site" / "spec-maintainers.md"


def _example() -> dict:
    text = PAGE.read_text("utf-8")
    (block,) = re.findall(r"( *)```yaml\n(\1# yaml-language-server: \$schema=\.\./meta/method\..*?)\1```", text, re.S)
    indent, body = block
    return yaml.safe_load(re.sub(rf"^{indent}", "", body, flags=re.M))


def test_the_example_method_is_new_and_a_valid_method_file() -> None:
    example = _example()
    existing = {
        yaml.safe_load(path.read_text("utf-8"))["method"] for path in (ROOT / "spec" / "methods").glob("*.yaml")
    }
    if example["method"] in existing:  # the page was followed: the method must then be listed as ours
        listing = yaml.safe_load((ROOT / "spec" / "upstream-differences.yaml").read_text("utf-8"))["differences"]
        ours = f"method {example['method']} ({example['kind']}): here, but not in the published schema"
        assert any(d["difference"].startswith(ours) for d in listing), example["method"]
    meta = json.loads((ROOT / "spec" / "meta" / "method.schema.json").read_text("utf-8"))
    # The page shows the fields a maintainer writes first; params and result follow in step 3.
    errors = [e.message for e in Draft202012Validator(meta).iter_errors(example) if e.validator != "required"]
    assert errors == []
