"""The audit: `python -m generator audit`, the spec's two schemas against the two ACP publishes.

`command` is the command line and report; the comparisons themselves are pure functions: on the wire
(schema_compare) and def by def, property by property and for stability (surface_compare).
"""
