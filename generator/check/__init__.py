"""Checking: every problem of a spec, each with its position, before anything is built from it.

Each spec file kind (kinds) is checked against its meta-schema in spec/meta/ (structure, with schema_check's
compiled validators), then for what it means across files: the retry classes, types and methods (semantics, which
also builds the model), the worked examples (examples), stability (stability), the conformance traces
(conformance), the listed upstream differences (upstream) and the accepted breaks (accepted); the names that become
files or symbols are checked together last (identifiers). The checks share one CheckState (context).
"""
