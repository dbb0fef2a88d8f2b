"""Reading the spec directory: every input file exactly once, as bytes, refusing anything that is not a plain file.

The bytes read here are the only view of the spec a run has: the checks parse them, and the no-op cache
fingerprints them, so an edit made while `generate` runs is seen by the next run, and deleting `spec/` during a
run cannot make the run lose part of its input. A path that is a directory, a FIFO, a device, a dangling or
looping symlink, or a symlink that leaves the spec directory is a diagnostic; nothing here ever blocks.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..diagnostics import Diagnostic, Location, display_path, folder_in_root

MAX_FILE_BYTES = 1024 * 1024  # the largest spec file is about 20 KB


@dataclass
class Snapshot:
    """The spec files of one run: their bytes by path relative to the spec directory, and problems met reading."""

    spec_dir: Path
    root: Path
    files: dict[str, bytes] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _names: dict[str, str] = field(default_factory=dict, repr=False)
    _folders: dict[str, Path | None] = field(default_factory=dict, repr=False)  # folder -> folder_in_root, per run

    def display(self, rel: str) -> str:
        """How a spec file is named in diagnostics (`display_path`), each folder resolved once per run."""
        name = self._names.get(rel)
        if name is None:
            path = self.spec_dir / rel
            folder = rel.rpartition("/")[0]
            if folder not in self._folders:
                self._folders[folder] = folder_in_root(path.parent, self.root)
            name = self._names[rel] = display_path(path, self.root, self._folders[folder])
        return name

    def matching(self, pattern: str) -> list[str]:
        """The files read for `pattern`, sorted."""
        return sorted(rel for rel in self.files if fnmatch.fnmatchcase(rel, pattern))


def take_snapshot(spec_dir: Path, root: Path, patterns: list[str]) -> Snapshot:
    """Read every file under `spec_dir` that matches one of `patterns` (globs like `methods/*.yaml`)."""
    snapshot = Snapshot(spec_dir, root)
    try:
        inside = spec_dir.resolve(strict=True)
    except (OSError, RuntimeError):
        return snapshot  # no spec directory at all: the kinds that need a file report it missing
    for pattern in patterns:
        for rel in _candidates(spec_dir, pattern):
            if rel not in snapshot.files:
                _read(snapshot, rel, inside)
    return snapshot


def _candidates(spec_dir: Path, pattern: str) -> list[str]:
    """Names matching `pattern` in its directory, without following anything but the directory itself."""
    folder, _, name_pattern = pattern.rpartition("/")
    directory = spec_dir / folder if folder else spec_dir
    if not any(ch in name_pattern for ch in "*?["):  # a fixed name; lexists, since a dangling link counts
        return [pattern] if os.path.lexists(directory / name_pattern) else []
    try:
        with os.scandir(directory) as entries:
            names = [e.name for e in entries if fnmatch.fnmatchcase(e.name, name_pattern)]
    except OSError:
        return []
    return sorted(f"{folder}/{name}" if folder else name for name in names)


def _read(snapshot: Snapshot, rel: str, inside: Path) -> None:
    path = snapshot.spec_dir / rel
    where = Location(snapshot.display(rel))

    def problem(code: str, message: str) -> None:
        snapshot.diagnostics.append(Diagnostic(where, code, message))

    try:
        if path.is_symlink():
            target = path.resolve(strict=True)
            if not target.is_relative_to(inside):
                problem("outside-spec", "a symlink that points outside the spec directory")
                return
        mode = path.stat().st_mode
    except RuntimeError:  # a symlink loop, on Pythons that say so this way
        problem("not-a-file", "a symlink loop, not a file")
        return
    except OSError as exc:
        problem("not-a-file", f"a symlink that leads nowhere ({exc.strerror or exc})")
        return
    if not stat.S_ISREG(mode):
        problem("not-a-file", f"{_what(mode)}, not a regular file")
        return
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since the check above, opening it must not wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        problem("unreadable-file", f"cannot be opened: {exc.strerror or exc}")
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            problem("not-a-file", "not a regular file")
            return
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        problem("unreadable-file", f"cannot be read: {exc.strerror or exc}")
        return
    finally:
        os.close(fd)
    if size > MAX_FILE_BYTES:
        problem("file-too-large", f"the file is larger than {MAX_FILE_BYTES} bytes, the limit for a spec file")
        return
    snapshot.files[rel] = b"".join(chunks)


def _what(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"
