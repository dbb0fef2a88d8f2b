"""Compare the spec with the schemas that ACP publishes: `python -m generator audit [SCHEMA.json]`.

The command line of the audit: it fetches the published schemas (the release pinned in generator/read/published.py,
its integrity checked), compares our two files with them, stable with stable and unstable with unstable
(schema_compare.py for the wire, surface_compare.py def by def, property by property and for stability), and
prints one line per difference. Deliberate differences are
listed, each with its reason, in `spec/upstream-differences.yaml`, which is loaded and checked with the rest of
the spec; exit status 1 when a difference is not listed, or a listed one no longer occurs (so the list stays
honest), 2 when the audit cannot run (a spec error, an unreadable schema, no network, no stable file).
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..read.fetch import FetchError
from ..read.published import UPSTREAM, fetch_upstream
from . import surface_compare
from .schema_compare import Difference, OurEntry, compare_schemas, published_entries

__all__ = ["FetchError", "Report", "compare", "main", "published_entries", "run_audit"]


def compare(spec: Any, published: dict[str, Any], published_stable: dict[str, Any] | None = None) -> list[Difference]:
    """Every difference between the spec (a model.Spec) and a published schema, sorted.

    Our side is what we publish: the two bundles of generator/render/schema/bundles.py, in the shape we publish them
    (generator/model/upstream_form.py: a union's inline variants have no def there). With the published stable file
    too, each file is compared with its counterpart (stable with stable, all with all), def by def and property
    by property beside the wire comparison, and so is the stability of every def and property
    (generator/audit/surface_compare.py); a difference found in one file only says which.
    """
    from ..model.upstream_form import published as published_form
    from ..render.schema.bundles import bundle as internal_bundle

    def bundle(spec: Any, *, unstable: bool) -> dict[str, Any]:
        return published_form(internal_bundle(spec, unstable=unstable))

    every = {(m.name, m.kind): OurEntry(m.name, m.kind, m.stability, m.params, m.result) for m in spec.methods}
    our_all = bundle(spec, unstable=True)["$defs"]
    their_all = published.get("$defs", {})
    in_unstable = set(compare_schemas(every, our_all, published, published_stable))
    in_unstable |= surface_compare.presence(our_all, their_all)
    if published_stable is None:
        return sorted(in_unstable)
    our_stable = bundle(spec, unstable=False)["$defs"]
    their_stable = published_stable.get("$defs", {})
    stable_entries = {key: entry for key, entry in every.items() if entry.stability == "stable"}
    in_stable = set(compare_schemas(stable_entries, our_stable, published_stable))
    stability, explained = surface_compare.stability((our_stable, our_all), (their_stable, their_all))
    in_stable |= surface_compare.presence(our_stable, their_stable, skip=explained)
    # A method's stability is a fact of the pair of files, not of one: it is not scoped to a file.
    stability |= {d for d in in_unstable if d.where.startswith("method ") and surface_compare.is_stability(d)}
    in_unstable -= stability
    return sorted({*surface_compare.scoped(in_stable, in_unstable), *stability})


@dataclass(frozen=True)
class Listed:
    difference: str
    reason: str


def listed_in(spec: Any) -> list[Listed]:
    """The deliberate differences of spec/upstream-differences.yaml, as the model holds them."""
    return [Listed(item.difference, item.reason) for item in spec.upstream_differences]


@dataclass(frozen=True)
class Report:
    found: list[Difference]
    listed: list[Listed]

    @property
    def unlisted(self) -> list[Difference]:
        known = {item.difference for item in self.listed}
        return [d for d in self.found if d.line() not in known]

    @property
    def stale(self) -> list[Listed]:
        lines = {d.line() for d in self.found}
        return [item for item in self.listed if item.difference not in lines]

    @property
    def ok(self) -> bool:
        return not self.unlisted and not self.stale

    def lines(self) -> list[str]:
        known = {item.difference for item in self.listed}
        out = [("listed      " if d.line() in known else "NOT LISTED  ") + d.line() for d in self.found]
        near = self.near_misses()
        for item in self.stale:
            if item.difference in near:  # copied without the file the audit names: say which line to list
                why = f"listed without the suffix the audit prints; list {json.dumps(near[item.difference])} instead"
            else:
                why = "listed, but the audit no longer finds it"
            out.append(f"STALE       {item.difference} ({why})")
        return out

    def near_misses(self) -> dict[str, str]:
        """A stale listing that is an unlisted line without its `[in ... only]` suffix, mapped to the full line."""
        bare = {d.line().split(" [in ", 1)[0]: d.line() for d in self.unlisted if d.only_in}
        return {item.difference: bare[item.difference] for item in self.stale if item.difference in bare}

    def to_paste(self) -> list[str]:
        """An entry of spec/upstream-differences.yaml per unlisted difference, its reason left empty to be written.

        An empty reason is refused by the spec's check, so an entry pasted without one cannot pass unnoticed.
        """
        out = []
        for line in dict.fromkeys(d.line() for d in self.unlisted):
            out += [f"  - difference: {json.dumps(line, ensure_ascii=False)}", '    reason: ""  # why we differ']
        return out


def run_audit(spec_dir: Path, root: Path, schema_path: Path, stable_path: Path | None) -> Report:
    """Load the spec and a published schema (and its stable sibling, if any) and compare them."""
    from ..pipeline import load_spec

    return audit_spec(load_spec(spec_dir, root), schema_path, stable_path)


def audit_spec(spec: Any, schema_path: Path, stable_path: Path | None) -> Report:
    """Compare a loaded spec with a published schema read from disk."""
    published = _read_schema(schema_path)
    stable = _read_schema(stable_path) if stable_path is not None else None
    return Report(compare(spec, published, stable), listed_in(spec))


def _read_schema(path: Path) -> dict[str, Any]:
    """A published schema document; ValueError when it is not a JSON object."""
    from ..read.jsonfile import read_json

    data = read_json(path.read_bytes(), str(path))  # SpecError with a located diagnostic when it is not JSON
    if not isinstance(data, dict) or not isinstance(data.get("$defs", {}), dict):
        raise ValueError(f"{path} is not a JSON Schema document with $defs")
    return data


def main(schema: Path | None, stable: Path | None, root: Path, spec_dir: Path) -> int:
    """The `audit` subcommand: 0 when only listed differences occur, 1 otherwise, 2 when it cannot run."""
    from ..diagnostics import SpecError
    from ..pipeline import load_spec

    try:  # the spec first: a broken spec (or differences list) is reported without fetching anything
        spec = load_spec(spec_dir, root)
    except SpecError as exc:
        sys.stderr.write(exc.report())
        return 2
    with tempfile.TemporaryDirectory(prefix="acp-upstream-") as tmp:
        if schema is None:
            try:
                schema, stable = fetch_upstream(Path(tmp))
            except FetchError as exc:
                print(f"audit: cannot fetch {UPSTREAM.spec}: {exc}", file=sys.stderr)
                return 2
            source = UPSTREAM.spec
        else:
            source = str(schema)
            if stable is None and schema.name == "schema.unstable.json" and (schema.parent / "schema.json").is_file():
                stable = schema.parent / "schema.json"
        try:
            if stable is None:  # the listed differences name the file they occur in: both files are needed
                _read_schema(schema)  # a file that cannot be read is reported as such first
                print(f"audit: no published schema.json beside {schema}; pass it with --stable", file=sys.stderr)
                return 2
            report = audit_spec(spec, schema, stable)
        except SpecError as exc:
            sys.stderr.write(exc.report("nothing was compared"))
            return 2
        except (OSError, ValueError) as exc:
            print(f"audit: {exc}", file=sys.stderr)
            return 2
    for line in report.lines():
        print(line)
    unlisted, stale = len(report.unlisted), len(report.stale)
    print(
        f"audit against {source}: {len(report.found)} difference(s), {len(report.found) - unlisted} listed, "
        f"{unlisted} not listed, {stale} stale listing(s)"
    )
    if report.unlisted:
        print("to accept them, add to spec/upstream-differences.yaml (under differences:) and write each reason:")
        for line in report.to_paste():
            print(line)
    return 0 if report.ok else 1
