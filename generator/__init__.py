"""The ACP v2 retry-layer spec toolchain: spec/ in, generated/ and site/reference/ out.

One package per stage, in pipeline order; a module imports only from its own package, from an earlier one, or
from the shared modules at the top (tests/pipeline/test_layout.py checks it):

    read/     the spec directory's bytes, YAML with positions, the parse cache, ACP's published schemas
    model/    the frozen model and the shapes derived from the spec's schemas (open unions, envelopes, names)
    check/    every check of a spec: structure against spec/meta/, then meaning, per file kind; builds the model
    pipeline  the front half: read, check and model a spec directory, every problem in one report
    render/   one renderer per artifact, from the model to {path: text}; incremental rendering
    write/    writing the outputs atomically or comparing them (`check`); what `generate` remembers
    audit/    `audit`: our schemas against ACP's published ones
    diff/     `diff` and `make compat`: two versions of the spec, change by change
    cli       the command line

Shared by every stage: diagnostics (a problem and its position), codes (every diagnostic code), compat_rules (every
rule `diff` applies) and paths (every output path).
"""

# The layout, as data: the stages in pipeline order (a package, or a module at the top), and the modules every stage
# shares. tests/pipeline/test_layout.py reads them and checks every import of generator/ against them.
STAGES = ("read", "model", "check", "pipeline", "render", "write", "audit", "diff", "cli")
SHARED = ("diagnostics", "codes", "compat_rules", "paths")
