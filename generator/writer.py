"""Stage 5: put rendered files on disk (atomically, per output root) or compare them with what is there."""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .paths import MANAGED_ROOTS

# Files that tools create next to generated ones and that are never compared.
IGNORED_PARTS = ("__pycache__", ".pytest_cache", ".ruff_cache")
IGNORED_SUFFIXES = (".pyc",)


def managed_root(relpath: str) -> str:
    """The managed root that `relpath` lives under; raises ValueError for any other path."""
    for root in MANAGED_ROOTS:
        if relpath.startswith(root + "/"):
            return root
    raise ValueError(f"{relpath} is outside the generated directories {MANAGED_ROOTS}")


def on_disk(root: Path) -> dict[str, Path]:
    """Every file currently under the managed roots, by path relative to `root`."""
    found: dict[str, Path] = {}
    for managed in MANAGED_ROOTS:
        base = root / managed
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            rel = path.relative_to(root)
            if path.is_file() and not _ignored(rel):
                found[rel.as_posix()] = path
    return found


def _ignored(rel: Path) -> bool:
    return any(part in IGNORED_PARTS for part in rel.parts) or rel.suffix in IGNORED_SUFFIXES


@dataclass
class Drift:
    """How the files on disk differ from what the spec renders to."""

    missing: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.missing or self.changed or self.extra)

    def report(self) -> str:
        lines = [f"missing: {p}" for p in self.missing]
        lines += [f"changed: {p}" for p in self.changed]
        lines += [f"extra:   {p}" for p in self.extra]
        return "\n".join(lines)


def compare(root: Path, files: dict[str, str]) -> Drift:
    """Compare rendered `files` with the managed roots under `root`."""
    present = on_disk(root)
    drift = Drift()
    for rel, text in sorted(files.items()):
        path = present.get(rel)
        if path is None:
            drift.missing.append(rel)
        elif path.read_bytes() != text.encode("utf-8"):
            drift.changed.append(rel)
    drift.extra = sorted(set(present) - set(files))
    return drift


def write(root: Path, files: dict[str, str]) -> list[str]:
    """Make the managed roots hold exactly `files`. Returns the roots that changed.

    Each root is built complete in a temporary sibling directory and then swapped in with two renames, so a
    reader (or a crash) sees the old tree or the new one, never a half-written mix. Roots whose content is
    already right are left alone, so their timestamps do not move.
    """
    by_root: dict[str, dict[str, str]] = {r: {} for r in MANAGED_ROOTS}
    for rel, text in files.items():
        by_root[managed_root(rel)][rel] = text
    changed_roots = []
    for managed, subset in by_root.items():
        if not compare_root(root, managed, subset):
            continue
        _swap_in(root, managed, subset)
        changed_roots.append(managed)
    return changed_roots


def compare_root(root: Path, managed: str, subset: dict[str, str]) -> bool:
    """True when the managed root differs from `subset`."""
    drift = compare(root, subset)
    return bool(drift.missing or drift.changed or any(p.startswith(managed + "/") for p in drift.extra))


def _swap_in(root: Path, managed: str, subset: dict[str, str]) -> None:
    target = root / managed
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.new-{os.getpid()}")
    retired = target.with_name(f".{target.name}.old-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for rel, text in subset.items():
            dest = staging / Path(rel).relative_to(managed)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(text.encode("utf-8"))
        if target.exists():
            target.rename(retired)
        try:
            staging.rename(target)
        except OSError:
            if retired.exists():
                retired.rename(target)  # put the old tree back rather than leave nothing
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(retired, ignore_errors=True)


def digest(text: str) -> str:
    """A content hash, used by the no-op cache."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
