"""The RFD's method audit holds: its keyed and duplicating sets are exactly the spec's.

The statement is read from the RFD text beside the project (`../shared/reference/`, at test time); nothing of it is
copied here. These two sets are all the RFD fixes: every other class is the spec's call (the design's method table
was where the spec started, not a second source to agree with), so it is not checked against anything but the spec.
"""

from __future__ import annotations

import re

import pytest

from generator.pipeline import load_spec
from tests.support import ROOT

SHARED = ROOT.parent / "shared"
RFD = SHARED / "reference" / "acp-v2-idempotency-keys-rfd.txt"
COUNTS = {"no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
# "The method audit finds one keyed method, session/prompt, and two duplicating methods, session/new and ..."
STATEMENT = re.compile(r"audit finds (\w+) (\w+) methods?, (.+?), and (\w+) (\w+) methods?, (.+?)\.(?:\s|$)")


def _names(listed: str) -> set[str]:
    return {name.strip() for name in re.split(r",|\band\b", listed) if name.strip()}


def _by_class(spec: object) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for method in spec.methods:  # type: ignore[attr-defined]
        found.setdefault(method.retry_class, set()).add(method.name)
    return found


@pytest.mark.skipif(not RFD.is_file(), reason="../shared/reference/ is not here")
def test_keyed_and_duplicating_sets_are_the_rfds() -> None:
    text = " ".join(RFD.read_text(encoding="utf-8").split())
    found = STATEMENT.search(text)
    assert found is not None, "the RFD's audit statement was not found"
    spec = load_spec(ROOT / "spec", ROOT)
    classes = {c.name for c in spec.classes}
    by_class = _by_class(spec)
    checked = []
    for count, class_name, listed in (found.group(1, 2, 3), found.group(4, 5, 6)):
        names = _names(listed)
        assert len(names) == COUNTS[count], (count, names)
        assert class_name in classes, f"the RFD's class {class_name!r} is not a class of the spec"
        assert by_class.get(class_name, set()) == names, class_name
        checked.append(class_name)
    assert sorted(checked) == ["duplicating", "keyed"]
