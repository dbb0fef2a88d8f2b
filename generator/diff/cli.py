"""The `diff` subcommand: arguments, loading both sides, printing, and the exit status.

Exit status: 0 no unaccepted breaking change, 1 at least one (or an accepted break that no longer occurs),
2 a spec error in either side or an argument that names nothing readable.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from ..diagnostics import Diagnostic, SpecError

EXIT_OK, EXIT_BREAKING, EXIT_ERROR = 0, 1, 2
WORK_TREE = "work tree"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register `diff` on the main command line."""
    text = "report what changed between two versions of the spec, and whether it breaks implementers"
    cmd = sub.add_parser(
        "diff",
        help=text,
        description=f"{text}. OLD and NEW are each a spec directory, a git revision of this repository, or a "
        "published ACP schema JSON file. Without OLD: the newest v* release tag, or before the first one the "
        "stable schema ACP publishes (the pinned npm release).",
    )
    cmd.add_argument("old", nargs="?", metavar="OLD", help="the earlier version (default: the newest v* tag)")
    cmd.add_argument("new", nargs="?", metavar="NEW", help="the later version (default: the work tree's spec/)")
    cmd.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    cmd.add_argument("--all", action="store_true", help="also report changes to descriptions and other prose")
    cmd.add_argument("--root", type=Path, default=Path(), help="project root (default: .)")
    cmd.add_argument("--spec", type=Path, default=None, help="spec directory (default: ROOT/spec)")


def run(args: argparse.Namespace) -> int:
    """Run `diff` with parsed arguments; print the report and return the exit status."""
    # Imported here, not at the top: the main command line registers `diff` on every run, and these pull in
    # the renderers and their libraries.
    from ..read.parsecache import SharedParses
    from . import report, sources
    from .compare import compare

    root: Path = args.root
    spec_dir: Path = args.spec or root / "spec"
    old_arg: str | None = args.old
    if old_arg is None:
        tags = sources.release_tags(root)
        if tags:
            old_arg = tags[-1][1]
        else:  # before the first release, the stable surface ACP publishes is the baseline
            from ..read.fetch import FetchError
            from . import baseline

            try:
                old_arg = str(baseline.stable_schema(root))
            except FetchError as exc:
                print(f"diff: no v* release tag yet, and {baseline.label()} cannot be fetched: {exc}", file=sys.stderr)
                return EXIT_ERROR
            print(f"diff: no v* release tag yet: comparing the work tree with {baseline.label()}", file=sys.stderr)
    try:
        old_source = sources.resolve(old_arg, root, spec_dir)
        new_source = (
            sources.resolve(args.new, root, spec_dir)
            if args.new is not None
            else sources.Source("dir", WORK_TREE, spec_dir)
        )
    except sources.SourceError as exc:
        print(f"diff: {exc}", file=sys.stderr)
        return EXIT_ERROR
    with tempfile.TemporaryDirectory(prefix="acp-diff-") as tmp:
        problems: list[Diagnostic] = []
        loaded = []
        parses = SharedParses()  # the files both sides hold byte for byte are parsed once
        for source in (old_source, new_source):
            try:
                loaded.append(sources.load(source, root, spec_dir, Path(tmp), parses))
            except SpecError as exc:
                problems.extend(exc.diagnostics)
            except sources.SourceError as exc:
                print(f"diff: {exc}", file=sys.stderr)
                return EXIT_ERROR
        if problems:
            for d in sorted(set(problems)):
                print(d.format(), file=sys.stderr)
            count = len(set(problems))
            print(f"{count} error{'s' if count != 1 else ''}; nothing was compared.", file=sys.stderr)
            return EXIT_ERROR
        old, new = loaded
        findings = compare(old, new, include_all=args.all)
    sys.stdout.write(report.as_json(findings) if args.format == "json" else report.text(findings))
    print(report.summary(findings, old_source.label, new_source.label), file=sys.stderr)
    if report.failing(findings):
        from ..check.accepted import KIND
        from ..check.kinds import by_name  # the file's name is written once, in the table of spec file kinds

        accepted_file = (spec_dir / by_name(KIND).pattern).as_posix()
        print(report.accept_hint(findings, _shown(accepted_file, root)), file=sys.stderr)
        return EXIT_BREAKING
    return EXIT_OK


def _shown(path: str, root: Path) -> str:
    """`path` relative to the project root when it lies inside it (as the README names it), else as given."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path
