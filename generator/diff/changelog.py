"""The "Changes" docs page: for every release tag and for the unreleased work tree, what changed and how badly.

It depends on git history, not only on spec/, so `make generate` does not write it (that would make `make check`
depend on which tags a clone has). The docs build adds it instead, from docs_hooks.py, every time it runs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePosixPath

from ..compat_rules import ACCEPTED, BREAKING, COMPATIBLE, UNSTABLE
from ..diagnostics import SpecError
from .compare import Finding, compare
from .snapshot import Snapshot
from .sources import Source, SourceError, load, load_schema, load_spec_dir, release_tags

PAGE_URI = "reference/changes.md"  # under the docs directory
EDIT_SOURCE = "spec/accepted-breaks.yaml"
_ORDER = ((BREAKING, "Breaking"), (ACCEPTED, "Breaking, accepted"), (COMPATIBLE, "Compatible"), (UNSTABLE, "Unstable"))


def changes_page(root: Path, spec_dir: Path | None = None) -> str:
    """The page's Markdown: newest first, the work tree, then each release against the one before it."""
    spec_dir = spec_dir or root / "spec"
    lines = [
        "---",
        "title: Changes",
        f"edit_source: {EDIT_SOURCE}",
        "---",
        "<!-- Written by the docs build (docs_hooks.py) from the git history with `python -m generator diff`. -->",
        "",
        "# Changes",
        "",
        "What changed in the spec from one release to the next, as `python -m generator diff` reports it; see",
        "[Compatibility rules](compatibility-rules.md) for what each rule means and who it breaks.",
        "",
    ]
    tags = release_tags(root)
    with tempfile.TemporaryDirectory(prefix="acp-changes-") as tmp:
        scratch = Path(tmp)
        try:
            current = load_spec_dir(spec_dir, root, label="work tree")
        except SpecError as exc:
            return "\n".join(
                [*lines, f"The work tree's spec has {len(exc.diagnostics)} error(s); run `make check`.", ""]
            )
        links = _links(current)
        snapshots: dict[str, Snapshot | str] = {}

        def side(tag: str) -> Snapshot | str:
            if tag not in snapshots:
                try:
                    snapshots[tag] = load(Source("rev", tag, root, rev=tag), root, spec_dir, scratch)
                except (SpecError, SourceError) as exc:
                    snapshots[tag] = f"the spec at {tag} cannot be read ({exc})"
            return snapshots[tag]

        lines.append("## Unreleased")
        lines.append("")
        if not tags:
            lines += _baseline_section(root, current, links)
        else:
            lines += _section(side(tags[-1][1]), current, f"Compared with {tags[-1][1]}.", links)
        for i in range(len(tags) - 1, -1, -1):
            tag = tags[i][1]
            lines += [f"## {tag}", ""]
            if i == 0:
                lines += ["The first release: everything in it is new.", ""]
                continue
            lines += _section(side(tags[i - 1][1]), side(tag), f"Compared with {tags[i - 1][1]}.", links)
    return "\n".join(lines).rstrip("\n") + "\n"


def _baseline_section(root: Path, current: Snapshot, links: dict[str, str]) -> list[str]:
    """Before the first release: the work tree against ACP's published stable schema, as `make compat` compares."""
    from ..read.fetch import FetchError
    from . import baseline

    intro = (
        f"There is no `v*` release tag yet, so the baseline is {baseline.label()}, the same comparison `make compat`"
        " makes."
    )
    try:
        published: Snapshot | str = load_schema(baseline.stable_schema(root), root)
    except (FetchError, SpecError, OSError) as exc:
        published = f"{baseline.label()} cannot be read ({exc})"
    return _section(published, current, intro, links)


def _section(old: Snapshot | str, new: Snapshot | str, intro: str, links: dict[str, str]) -> list[str]:
    if isinstance(old, str) or isinstance(new, str):
        return [f"Not compared: {old if isinstance(old, str) else new}.", ""]
    findings = compare(old, new)
    if not findings:
        return [intro + " No changes.", ""]
    out = [intro, ""]
    for severity, title in _ORDER:
        group = [f for f in findings if f.severity == severity]
        if group:
            out += [f"### {title} ({len(group)})", ""]
            out += [_item(f, links) for f in sorted(group, key=lambda f: (f.subject, f.rule, f.message))]
            out.append("")
    return out


def _item(f: Finding, links: dict[str, str]) -> str:
    detail = f.message.removeprefix(f"{f.subject}: ")
    owner = f.subject.split(" (")[0].split("[")[0].split("|")[0]
    owner = owner if "/" in owner or owner.startswith("$") else owner.split(".")[0]
    subject = f"`{f.subject}`"
    if owner in links:
        subject = f"[{subject}]({links[owner]})"
    return f"- {subject}: {detail} ([`{f.rule}`](compatibility-rules.md#{f.rule}))"


def _links(current: Snapshot) -> dict[str, str]:
    """Pages that exist in this build: method pages by method name, type sections by type name."""
    from ..model.naming import method_slug

    out: dict[str, str] = {}
    names = [m.name for m in current.methods.values()]
    for m in current.methods.values():
        slug = method_slug(m.name, m.kind, has_twin=names.count(m.name) > 1)
        out.setdefault(m.name, f"methods/{slug}.md")
    for name, (file, _) in current.origins.items():
        out[name] = f"types/{PurePosixPath(file).stem}.md#{name}"
    return out
