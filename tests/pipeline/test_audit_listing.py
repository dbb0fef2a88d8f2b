"""What the audit prints for a maintainer to copy: the entries to paste, and a listing copied without its suffix."""

from __future__ import annotations

import yaml

from generator.audit.command import Listed, Report
from generator.audit.schema_compare import Difference

OURS = Difference("method session/pin (request)", "here, but not in the published schema", "schema.unstable.json")
BOTH = Difference("type PinSessionRequest", "defined here only")


def test_the_entries_to_paste_are_yaml_holding_each_line_exactly() -> None:
    report = Report([OURS, BOTH], [])
    pasted = yaml.safe_load("differences:\n" + "\n".join(report.to_paste()))["differences"]
    assert [item["difference"] for item in pasted] == [OURS.line(), BOTH.line()]
    assert all(item["reason"] == "" for item in pasted)  # left for the maintainer; the spec's check refuses it empty


def test_a_listing_without_its_file_suffix_is_named_with_the_line_to_list() -> None:
    bare = OURS.line().split(" [in ", 1)[0]
    report = Report([OURS], [Listed(bare, "ours")])
    assert not report.ok and report.near_misses() == {bare: OURS.line()}
    (stale,) = [line for line in report.lines() if line.startswith("STALE")]
    assert "without the suffix" in stale and f'"{OURS.line()}"' in stale
    # a listing that is simply gone says so, as before
    gone = Report([], [Listed("type Gone: defined here only", "r")])
    assert gone.lines() == ["STALE       type Gone: defined here only (listed, but the audit no longer finds it)"]


def test_a_listed_difference_is_not_offered_again() -> None:
    report = Report([OURS, BOTH], [Listed(BOTH.line(), "r")])
    assert [line for line in report.to_paste() if "difference" in line] == [f'  - difference: "{OURS.line()}"']
