"""Command line: `python -m generator generate|check|validate|audit|diff`.

Exit status: 0 success (or up to date), 1 drift (check) or an unaccepted breaking change (diff), 2 a spec error
or a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .render.incremental import RenderCache

EXIT_OK, EXIT_DRIFT, EXIT_ERROR = 0, 1, 2


# Each command: its one-line summary (the overview) and what its own --help adds (what it reads and writes, and
# its exit statuses).
COMMANDS = (
    (
        "generate",
        "validate the spec and write every generated file",
        "Reads spec/, checks its structure and meaning, and writes generated/ and site/reference/ (atomically:"
        " nothing changes when the spec has an error). Prints one summary line: how many files, from how many"
        " method entries, and which output roots changed. Skips the work when no input changed since the last"
        " run, and otherwise re-renders only the outputs whose spec data changed, unless --force. Exit status: 0"
        " written or up to date, 2 spec error (every problem is printed as file:line:col: error[CODE]: message).",
    ),
    (
        "check",
        "validate the spec and report generated files that are out of date",
        "Renders everything in memory and compares it with generated/ and site/reference/. Prints a summary"
        " line when they match; otherwise names each missing, changed and extra file and the command that fixes"
        " it. Writes nothing. Exit status: 0 up to date, 1 drift, 2 spec error.",
    ),
    (
        "validate",
        "only validate the spec",
        "Checks the spec's structure (the meta-schemas in spec/meta/) and its meaning (classes, keys, types,"
        " examples, error codes) and prints a summary line. Writes nothing. Exit status: 0 valid, 2 spec error.",
    ),
    (
        "audit",
        "compare the spec with a published ACP schema (default: the pinned npm release)",
        "Compares our schema.json and schema.unstable.json with the two files ACP publishes (stable with stable,"
        " unstable with unstable: methods, wire types, every def and property, and their stability) and prints one"
        " line per difference, marked listed or NOT LISTED against spec/upstream-differences.yaml, then a summary."
        " Exit status: 0 every difference listed and every listing still true, 1 otherwise, 2 usage error.",
    ),
)
EPILOG = """examples:
  python -m generator generate          write generated/ and site/reference/ from spec/
  python -m generator check             CI: exit 1 and name the files when they are out of date
  python -m generator validate --spec other/spec
  python -m generator audit             compare with the pinned published schema

exit status: 0 success, 1 drift (check) or unlisted differences (audit), 2 spec or usage error."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m generator",
        description="The ACP v2 retry-class toolchain: turns the YAML spec in spec/ into schemas, packages, "
        "tables, test vectors and docs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, summary, details in COMMANDS:
        cmd = sub.add_parser(name, help=summary, description=f"{summary[0].upper()}{summary[1:]}. {details}")
        cmd.add_argument("--root", type=Path, default=Path(), help="project root (default: .)")
        cmd.add_argument("--spec", type=Path, default=None, help="spec directory (default: ROOT/spec)")
        if name == "generate":
            cmd.add_argument("--force", action="store_true", help="render everything even if nothing changed")
        if name == "audit":
            cmd.add_argument("schema", type=Path, nargs="?", help="the published schema.unstable.json")
            cmd.add_argument(
                "--stable", type=Path, default=None, help="the published schema.json (default: beside SCHEMA)"
            )
    from .diff.cli import add_parser as add_diff

    add_diff(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root: Path = args.root
    spec_dir: Path = args.spec or root / "spec"
    try:
        if args.command == "diff":
            from .diff.cli import run as run_diff

            return run_diff(args)
        if args.command == "audit":
            from .audit import command as audit

            return audit.main(args.schema, args.stable, root, spec_dir)
        return _run(args.command, root, spec_dir, force=getattr(args, "force", False))
    except KeyboardInterrupt:
        return 130
    except Exception:  # a bug in the generator, not in the spec: say so, keep the details short
        # Writing is the last step and reports its own failures (writer.WriteError), so nothing was written here.
        print("internal error in the generator (nothing was written):", file=sys.stderr)
        import traceback  # here, not at the top: only a failing run needs it

        print("".join(traceback.format_exc(limit=-3)).rstrip(), file=sys.stderr)
        return EXIT_ERROR


def _run(command: str, root: Path, spec_dir: Path, *, force: bool) -> int:
    from .render.incremental import memo_path
    from .render.python import codegen, described

    generating = command == "generate"
    # A run with no memo of the code generator's output will most likely run it: the worker starts first, to import
    # its library while this process reads and loads the spec (and is ended if the run turns out not to need it).
    if command == "check" or (generating and (force or not memo_path(root, described.MEMO_STEP).exists())):
        codegen.warm()
    try:
        return _checked(command, root, spec_dir, force=force)
    except codegen.CodegenError as exc:
        print(f"{command}: {exc} (nothing was written)", file=sys.stderr)
        return EXIT_ERROR
    finally:
        codegen.stop()


def _checked(command: str, root: Path, spec_dir: Path, *, force: bool) -> int:
    """Read the spec, then validate, check or generate (`_run` holds the code generator's worker)."""
    from .pipeline import read_spec
    from .write import cache

    snapshot = read_spec(spec_dir, root)  # the only time this run reads the spec
    generating = command == "generate"
    env = cache.environment() if generating else ""
    saved = cache.load(root) if generating and not force else {}
    if generating and not force and cache.is_fresh(root, snapshot, env, saved):
        print("generate: up to date (nothing changed since the last run)")
        return EXIT_OK

    from .diagnostics import SpecError
    from .pipeline import load_spec
    from .read.parsecache import ParseCache

    # --force starts from nothing: no parsed file and no renderer output of an earlier run is reused.
    parsed = ParseCache(root, env) if generating and not force else None
    try:
        spec = load_spec(spec_dir, root, snapshot, parsed)
    except SpecError as exc:
        sys.stderr.write(exc.report())
        return EXIT_ERROR
    finally:
        if parsed is not None:
            parsed.save()
    if command == "validate":
        print(f"validate: {spec_dir} is valid ({len(spec.methods)} entries, {len(spec.types)} types)")
        return EXIT_OK

    from .render import render_all
    from .render.incremental import RenderCache
    from .write import writer

    if command == "check":  # always renders everything: CI compares with what a full run produces
        files = render_all(spec)
        drift = writer.compare(root, files)
        if not drift:
            print(f"check: {len(files)} generated files are up to date")
            return EXIT_OK
        print("check: generated files differ from what the spec produces:", file=sys.stderr)
        print(drift.report(), file=sys.stderr)
        print("fix: run `make generate` and commit the result", file=sys.stderr)
        return EXIT_DRIFT
    renders = RenderCache(root, env, cache.renderer_records(saved, env), recall=not force)
    files = render_all(spec, renders)
    try:
        changed = writer.write(root, files)
    except writer.WriteError as exc:
        print(f"generate: {exc}", file=sys.stderr)
        print("fix the cause and run `make generate` again; it finishes what this run started", file=sys.stderr)
        return EXIT_ERROR
    cache.save(root, snapshot, files, env, renders.records)
    summary = ", ".join(changed) if changed else "no file changed"
    print(f"generate: {len(files)} files from {len(spec.methods)} entries ({summary}){_reuse_note(renders)}")
    return EXIT_OK


def _reuse_note(renders: RenderCache) -> str:
    """How much an incremental run reused, for the summary line (nothing when it rendered everything)."""
    if not renders.reused:
        return ""
    done = ", ".join(renders.rendered) if renders.rendered else "none"
    return f"; re-rendered: {done}; reused {len(renders.reused)} renderers' files"
