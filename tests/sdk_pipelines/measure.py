"""Wall time of the SDK pipelines on the published v2 schema and on ours, the median of a few runs each.

    .venv/bin/python -m tests.sdk_pipelines.measure [--runs N] [--schema-dir DIR]

Times the Python SDK's whole gen_all.py (a run that fails is timed to where it stops, and says so) and the
TypeScript SDK's hey-api set-up (tools/ts-pipeline/generate.mjs, without tsc), alone and as the SDK's whole generate
step (`--meta --format`: its meta constants, prettier over every file, as bench_sdk_generators times it): wall clock,
and the CPU seconds of the child processes. Uses the same pinned tools and caches as the tests; informational,
nothing is asserted.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import tempfile
from pathlib import Path

from generator.read.published import fetch_upstream
from tests.sdk_pipelines import meta, python_sdk, typescript_sdk
from tests.support import ROOT


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} s (runs: {', '.join(f'{v:.2f}' for v in values)})"


def _children_cpu() -> float:
    """CPU seconds (user and system) of every finished child process so far: less sensitive to a busy machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--schema-dir", type=Path, default=ROOT / "generated" / "schema")
    args = parser.parse_args(argv)
    python, sdist = python_sdk.tool_python(), python_sdk.fetch_sdist()
    node = shutil.which("node")
    with tempfile.TemporaryDirectory(prefix="acp-measure-") as tmp:
        work = Path(tmp)
        published, _ = fetch_upstream(work / "published")
        for name, schema_file in (("published", published), ("ours", args.schema_dir / "schema.unstable.json")):
            meta_data = meta.unstable_meta(schema_file.parent)
            times, cpu, outcome = [], [], ""
            for index in range(args.runs):
                root = work / f"py-{name}-{index}"
                root.mkdir()
                before = _children_cpu()
                run = python_sdk.run_gen_all(python, sdist, root, schema_file, meta_data)
                times.append(run.seconds)
                cpu.append(_children_cpu() - before)
                outcome = "completes" if run.returncode == 0 else f"stops: {run.first_error()}"
            print(f"gen_all.py  {name:9s} wall {_median(times)}; cpu {_median(cpu)}  {outcome}")
            if node is None:
                continue
            # hey-api alone, then the SDK's whole step (its meta constants, prettier over everything), as the bench
            for label, step in (("hey-api", {}), ("sdk step", {"meta": meta_data, "formatted": True})):
                times, cpu = [], []
                for index in range(args.runs):
                    before = _children_cpu()
                    out_dir = work / f"ts-{name}-{label.replace(' ', '-')}-{index}"
                    output, done = typescript_sdk.generate(node, schema_file, out_dir, **step)
                    times.append(output.seconds)
                    cpu.append(_children_cpu() - before)
                    outcome = "completes" if done.returncode == 0 else "fails"
                print(f"{label:11s} {name:9s} wall {_median(times)}; cpu {_median(cpu)}  {outcome}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
