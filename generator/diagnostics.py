"""Diagnostics: what the validator says about a spec, with a file position for each problem."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import codes


@dataclass(frozen=True, order=True)
class Location:
    """A place in a spec file: the file, a 1-based line and column, and the data path inside the document."""

    file: str
    line: int = 1
    column: int = 1
    path: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem found in a spec. Sorting orders diagnostics by file, line, column and code."""

    location: Location
    code: str
    message: str
    severity: str = field(default="error", compare=False)

    def __post_init__(self) -> None:
        # An unregistered code is a bug in the generator, not in the spec: fail loudly where it is made.
        if not codes.is_registered(self.code):
            raise ValueError(f"diagnostic code {self.code!r} is not registered in generator/codes.py")

    def format(self) -> str:
        """Render as `file:line:col: error[code]: message (at path)`."""
        where = f" (at {self.location.path})" if self.location.path else ""
        return _one_line(f"{self.location}: {self.severity}[{self.code}]: {self.message}{where}")


def _one_line(text: str) -> str:
    """`text` with every character that is not printable escaped, so a diagnostic is always one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class SpecError(Exception):
    """Raised when a spec has errors; carries every diagnostic found, already sorted."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = sorted(set(diagnostics))
        super().__init__(f"{len(self.diagnostics)} error(s) in the spec")

    def report(self, outcome: str = "nothing was written") -> str:
        """All diagnostics, one per line, then a count and what the command did not do because of them."""
        lines = [d.format() for d in self.diagnostics]
        count = len(self.diagnostics)
        lines.append(f"{count} error{'s' if count != 1 else ''}; {outcome}.")
        return "\n".join(lines) + "\n"


def folder_in_root(folder: Path, root: Path) -> Path | None:
    """`folder`, resolved, relative to the resolved project root; None when it lies outside it (or cannot be
    resolved)."""
    try:
        return folder.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return None


def display_path(path: Path, root: Path, folder: Path | None = None) -> str:
    """The path as a maintainer would type it: relative to the project root when inside it, with `/`.

    The folder is resolved, not the file: a symlinked spec file is named as the maintainer wrote it. `folder`, when
    given, is `folder_in_root(path.parent, root)` already worked out (a caller naming many files of one folder).
    """
    inside = folder if folder is not None else folder_in_root(path.parent, root)
    return (inside / path.name).as_posix() if inside is not None else path.as_posix()
