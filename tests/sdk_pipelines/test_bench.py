"""bench/bench_sdk_generators.py without its timing: a missing tool gives a line saying what to install (an error in
CI), and a run of theirs that fails is never timed as a success."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench import bench_sdk_generators as bench
from tests.sdk_pipelines import python_sdk, typescript_sdk


def _no_python_sdk() -> Path:
    raise python_sdk.SetupError("pip download agent-client-protocol==0.12.1 failed: no network")


def _never_timed(*args: object, **kwargs: object) -> tuple[float, float]:
    raise AssertionError("nothing may be timed when no tool of theirs can run")


@pytest.fixture
def nothing_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(python_sdk, "tool_python", _no_python_sdk)
    monkeypatch.setattr(typescript_sdk.shutil, "which", lambda name: None)
    monkeypatch.setattr(bench, "_measured", _never_timed)


@pytest.mark.usefixtures("nothing_installed")
def test_missing_tools_are_named_with_how_to_install_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.run() == []
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "  the Python SDK's gen_all.py is missing, no line for it: pip download agent-client-protocol==0.12.1 "
        f"failed: no network; {bench.PYTHON_SDK_HINT}",
        "  hey-api is missing, no line for it: node is not on PATH; install Node 20 "
        "(.ci/setup.d/10-node-typescript.sh), then run .ci/setup.d/13-ts-pipeline.sh",
    ]
    assert "python-sdk-tools.txt" in bench.PYTHON_SDK_HINT and ".cache/sdk-pipelines/" in bench.PYTHON_SDK_HINT


def test_an_uninstalled_ts_pipeline_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(typescript_sdk.shutil, "which", lambda name: "/usr/bin/node")
    monkeypatch.setattr(typescript_sdk, "NODE_MODULES", tmp_path / "node_modules")
    monkeypatch.setattr(bench, "python_tool", _no_python_sdk)
    assert bench.available_tools() == []
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  hey-api is missing, no line for it: tools/ts-pipeline/node_modules is not installed; "
        "run .ci/setup.d/13-ts-pipeline.sh"
    )


@pytest.mark.usefixtures("nothing_installed")
def test_in_ci_a_missing_tool_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(RuntimeError, match=r"^the Python SDK's gen_all\.py is missing.*\(CI installs every tool"):
        bench.run()


def _gen_all_run(tmp_path: Path, returncode: int, written: bytes) -> python_sdk.Run:
    module = tmp_path / python_sdk.OUTPUT
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_bytes(written)
    output = "Traceback (most recent call last):\nValueError: no such union\n" if returncode else ""
    return python_sdk.Run(tmp_path, returncode, output, 4.5, shipped=b"# the sdist's module\n")


def test_a_failed_gen_all_run_is_not_timed(tmp_path: Path) -> None:
    assert bench.checked_gen_all(_gen_all_run(tmp_path, 0, b"# generated\n")) == 4.5
    with pytest.raises(
        RuntimeError, match=r"gen_all\.py failed on generated/schema/schema\.unstable\.json: ValueError: no such union$"
    ):
        bench.checked_gen_all(_gen_all_run(tmp_path, 1, b"# generated\n"))
    with pytest.raises(RuntimeError, match=r"it exited 0 but wrote no src/acp/schema\.py$"):  # the shipped one left
        bench.checked_gen_all(_gen_all_run(tmp_path, 0, b"# the sdist's module\n"))


def test_a_failed_hey_api_run_is_not_timed(tmp_path: Path) -> None:
    output = typescript_sdk.Output(tmp_path, 1.25)
    ok = subprocess.CompletedProcess(["node"], 0, "", "")
    with pytest.raises(RuntimeError, match=r"hey-api failed .*\(exit 0\)"):  # exit 0, but nothing written
        bench.checked_hey_api(output, ok)
    for name in typescript_sdk.OUTPUTS:
        (tmp_path / name).write_text("export {};\n", encoding="utf-8")
    assert bench.checked_hey_api(output, ok) == 1.25
    with pytest.raises(RuntimeError, match=r"\(exit 1\):\nError: cannot resolve"):
        bench.checked_hey_api(output, subprocess.CompletedProcess(["node"], 1, "", "Error: cannot resolve"))
