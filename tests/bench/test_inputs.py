"""The specs the benchmarks build are specs the generator accepts.

`make bench` is not part of `make test`, so a spec check added later could make a benchmark's input invalid and
nobody would notice before the next bench run: the synthetic spec of bench_generate stopped loading when every
method came to need a worked example. These tests load what the benches build, as the benches' runs would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import bench_diff
from bench.bench_generate import scaled_spec
from generator.diagnostics import SpecError
from generator.pipeline import load_spec
from tests.support import ROOT


def _loaded(spec_dir: Path) -> int:
    """The number of methods of the spec at `spec_dir`; fails the test with every diagnostic when it is refused."""
    try:
        return len(load_spec(spec_dir, spec_dir.parent).methods)
    except SpecError as exc:
        pytest.fail("the benchmark's spec is refused:\n" + exc.report(), pytrace=False)


def test_the_synthetic_spec_loads_with_every_copy(tmp_path: Path) -> None:
    methods, types = scaled_spec(ROOT / "spec", tmp_path / "spec", 2)
    real = _loaded(ROOT / "spec")
    assert methods == 2 * len(list((ROOT / "spec" / "methods").glob("*.yaml")))
    assert _loaded(tmp_path / "spec") == 2 * real
    assert types > 0


def test_the_diff_copies_load_and_differ(tmp_path: Path) -> None:
    old, new = bench_diff._copies(tmp_path)
    assert _loaded(old) == _loaded(new)
    assert (old / bench_diff.CHANGED_FILE).read_bytes() != (new / bench_diff.CHANGED_FILE).read_bytes()
