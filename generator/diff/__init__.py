"""`python -m generator diff OLD [NEW]`: what changed between two versions of the spec, and who it breaks.

    OLD, NEW ──sources──> Snapshot (methods, types, retry vocabulary, positions)
                              │
                 compare (methods, retry) + schemas (types) ──> Change…
                              │
               rules (severity by role and stability) + accepted (spec/accepted-breaks.yaml)
                              │
                         report ──> text or JSON, exit 0 / 1 / 2

Kept import-light on purpose: the loader imports `accepted` from here to check spec/accepted-breaks.yaml.
"""
