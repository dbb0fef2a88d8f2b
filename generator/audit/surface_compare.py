"""Comparing the two published files with ours, def by def and property by property (a pure function).

ACP publishes a stable schema and an unstable one (which holds everything). A def that only the unstable file
has is unstable; a property that a def has in the unstable file only is unstable. The audit compares our pair
with the published pair in three ways, each line in the form of generator/audit/schema_compare.py:

- which defs each file defines (`defined here only`, `defined there only`), and each def's own properties
  (`property P only here (optional)`, ...) and required-ness, in each file;
- the stability of every def and property that both unstable files have (`unstable here, stable there`), which
  the presence lines of the stable files would otherwise say a second time: those are left out.

`scoped` joins the lines of the two files: a difference found in both is one line; one found in one file only
says which (`[in schema.json only]`), so that a listed difference names exactly what it accepts.
"""

from __future__ import annotations

from typing import Any

from .schema_compare import Difference

STABLE_FILE, UNSTABLE_FILE = "schema.json", "schema.unstable.json"


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _required(schema: Any) -> set[str]:
    required = schema.get("required") if isinstance(schema, dict) else None
    return {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()


def presence(ours: dict[str, Any], theirs: dict[str, Any], skip: set[str] | None = None) -> set[Difference]:
    """The defs, properties and required-ness that differ between two `$defs`. `skip` names defs and properties
    (`Def` or `Def.prop`) whose presence is not to be reported (a stability line says it)."""
    skip = skip or set()
    found: set[Difference] = set()
    for name in sorted(set(ours) | set(theirs)):
        where = f"type {name}"
        if name in skip:
            continue
        if name not in theirs:
            found.add(Difference(where, "defined here only"))
            continue
        if name not in ours:
            found.add(Difference(where, "defined there only"))
            continue
        pa, pb = _properties(ours[name]), _properties(theirs[name])
        ra, rb = _required(ours[name]), _required(theirs[name])
        for prop in sorted(set(pa) | set(pb)):
            if f"{name}.{prop}" in skip:
                continue
            if prop not in pb:
                found.add(Difference(where, f"property {prop} only here ({'required' if prop in ra else 'optional'})"))
            elif prop not in pa:
                found.add(Difference(where, f"property {prop} only there ({'required' if prop in rb else 'optional'})"))
            elif (prop in ra) != (prop in rb):
                what = "required here, optional there" if prop in ra else "required there, optional here"
                found.add(Difference(f"{where}.{prop}", what))
    return found


def stability(
    ours: tuple[dict[str, Any], dict[str, Any]], theirs: tuple[dict[str, Any], dict[str, Any]]
) -> tuple[set[Difference], set[str]]:
    """Stability differences of the defs and properties both unstable files have, from each side's
    (stable defs, unstable defs); and the names (`Def`, `Def.prop`) whose stable-file presence they explain."""
    (our_stable, our_all), (their_stable, their_all) = ours, theirs
    found: set[Difference] = set()
    explained: set[str] = set()
    for name in sorted(set(our_all) & set(their_all)):
        here, there = name in our_stable, name in their_stable
        if here != there:
            found.add(Difference(f"type {name}", _says(here, there)))
            explained.add(name)
            continue
        if not here:
            continue  # unstable on both sides: so are its properties
        shared = set(_properties(our_all[name])) & set(_properties(their_all[name]))
        for prop in sorted(shared):
            p_here = prop in _properties(our_stable[name])
            p_there = prop in _properties(their_stable[name])
            if p_here != p_there:
                found.add(Difference(f"type {name}.{prop}", _says(p_here, p_there)))
                explained.add(f"{name}.{prop}")
    return found, explained


def _says(here: bool, there: bool) -> str:
    return f"{'stable' if here else 'unstable'} here, {'stable' if there else 'unstable'} there"


def is_stability(difference: Difference) -> bool:
    """Whether a difference says that something is stable on one side and unstable on the other."""
    return difference.what in (_says(True, False), _says(False, True))


def scoped(in_stable: set[Difference], in_unstable: set[Difference]) -> list[Difference]:
    """The differences of both files as one sorted list, each found in one file only labelled with that file."""
    out = set(in_stable & in_unstable)
    out |= {Difference(d.where, d.what, STABLE_FILE) for d in in_stable - in_unstable}
    out |= {Difference(d.where, d.what, UNSTABLE_FILE) for d in in_unstable - in_stable}
    return sorted(out)
