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
    cmd.add_argument(
        "--full",
        action="store_true",
        help="without OLD and before the first release: list every difference from ACP's published schema, not only "
        "the breaks and what changed since the last commit (the rest is summarised in one line by default)",
    )
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
    published_baseline = False  # the baseline is ACP's schema: most findings are known differences, summarised
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
            published_baseline = args.new is None and not args.full and args.format == "text"
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
        known = _known_at_head(old, root, spec_dir, Path(tmp), parses, args.all) if published_baseline else None
    if published_baseline:
        shown, hidden = report.split_known(findings, known)
        sys.stdout.write(report.text(shown))
        print(report.summary(findings, old_source.label, new_source.label), file=sys.stderr)
        if hidden:
            print(report.hidden_line(hidden, known is not None), file=sys.stderr)
    else:
        sys.stdout.write(report.as_json(findings) if args.format == "json" else report.text(findings))
        print(report.summary(findings, old_source.label, new_source.label), file=sys.stderr)
    if report.failing(findings):
        from ..check.accepted import KIND
        from ..check.kinds import by_name  # the file's name is written once, in the table of spec file kinds

        accepted_file = (spec_dir / by_name(KIND).pattern).as_posix()
        print(report.accept_hint(findings, _shown(accepted_file, root)), file=sys.stderr)
        return EXIT_BREAKING
    return EXIT_OK


def _known_at_head(old, root: Path, spec_dir: Path, scratch: Path, parses, include_all: bool) -> set | None:
    """What the last commit's spec already differed from the baseline in (None when there is no commit to read):
    those differences are known, and the report leads with the rest."""
    from . import report, sources
    from .compare import compare

    try:
        head = sources.load(sources.Source("rev", "HEAD", root, rev="HEAD"), root, spec_dir, scratch, parses)
    except (sources.SourceError, SpecError):
        return None  # no repository, no spec at HEAD, or a broken one: nothing counts as known
    return {report.identity(f) for f in compare(old, head, include_all=include_all)}


def _shown(path: str, root: Path) -> str:
    """`path` relative to the project root when it lies inside it (as the README names it), else as given."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path
