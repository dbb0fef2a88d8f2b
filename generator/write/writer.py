"""Writing: put rendered files on disk (atomically, per output root) or compare them with what is there."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import MANAGED_ROOTS

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


class WriteError(Exception):
    """Writing stopped part way: says which roots were replaced before the failure and which one failed."""

    def __init__(self, replaced: list[str], failed: str, reason: str) -> None:
        self.replaced = replaced
        self.failed = failed
        self.reason = reason
        done = ", ".join(f"{r}/" for r in replaced) if replaced else "none"
        super().__init__(f"could not replace {failed}/ ({reason}); roots replaced before that: {done}")


def write(root: Path, files: dict[str, str]) -> list[str]:
    """Make the managed roots hold exactly `files`. Returns the roots that changed; WriteError if one fails.

    Each root is built complete in a temporary sibling directory and then swapped in with two renames, so a
    reader sees the old tree or the new one, never a half-written mix. A run killed between the two renames
    leaves the old tree aside; `recover` (run first, by every write) puts it back and removes what interrupted
    runs left. Roots whose content is already right are left alone, so their timestamps do not move.
    """
    by_root: dict[str, dict[str, str]] = {r: {} for r in MANAGED_ROOTS}
    for rel, text in files.items():
        by_root[managed_root(rel)][rel] = text
    changed_roots: list[str] = []
    for managed, subset in by_root.items():
        try:
            recover(root, managed)
            drift = compare(root, subset)
            if not (drift.missing or drift.changed or any(p.startswith(managed + "/") for p in drift.extra)):
                continue
            _swap_in(root, managed, subset, set(subset) - set(drift.missing) - set(drift.changed))
        except OSError as exc:
            raise WriteError(changed_roots, managed, exc.strerror or str(exc)) from None
        changed_roots.append(managed)
    return changed_roots


def leftovers(root: Path, managed: str) -> list[Path]:
    """Staging and retired trees of `managed` that some run left behind (theirs or ours), oldest name first."""
    target = root / managed
    if not target.parent.is_dir():
        return []
    return sorted(p for p in target.parent.iterdir() if _LEFTOVER.match(p.name) and p.name.split(".")[1] == target.name)


_LEFTOVER = re.compile(r"^\.[^.]+\.(old|new)-(\d+)$")


def recover(root: Path, managed: str) -> None:
    """Undo an interrupted swap of `managed` and remove the leftovers of runs that are no longer running.

    A missing root next to a retired tree means a run died between its two renames: the retired tree is the
    complete old content, so it goes back (the run that follows writes the new one). Trees of a live process
    (another generate running now) are not touched.
    """
    target = root / managed
    for path in leftovers(root, managed):
        match = _LEFTOVER.match(path.name)
        assert match is not None  # leftovers() only lists matching names
        state, pid = match.group(1), int(match.group(2))
        if pid != os.getpid() and _alive(pid):
            continue
        if state == "old" and not target.exists():
            path.rename(target)
            continue
        shutil.rmtree(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _swap_in(root: Path, managed: str, subset: dict[str, str], unchanged: set[str]) -> None:
    """Replace the managed root with `subset`; the files in `unchanged` hold the right bytes on disk already, and
    the new tree links to them rather than writing them again (an edit to one meanwhile is as if made just after)."""
    target = root / managed
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.new-{os.getpid()}")
    retired = target.with_name(f".{target.name}.old-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for rel, text in subset.items():
            dest = staging / Path(rel).relative_to(managed)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if rel not in unchanged or not _linked(dest, root / rel):
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


def _linked(dest: Path, source: Path) -> bool:
    """Make `dest` a hard link to `source`; False where that fails (a file system without them, say)."""
    try:
        dest.hardlink_to(source)
    except OSError:
        return False
    return True


def digest(text: str) -> str:
    """A content hash, used by the no-op cache."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
