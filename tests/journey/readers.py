"""The test modules that read the spec, which the maintainer journey runs after each step and `make quick` runs on
the work tree; `python -m tests.journey.readers` prints them, one a line.
"""

from __future__ import annotations

# The test modules whose outcome depends on what the spec says (counts, classes, names, the upstream listing, the
# release tags and accepted breaks). Every other module works on fixture specs of its own, or on behaviour that no
# spec edit of these steps touches. SPEC_READERS run after every step; FINAL_READERS, the slower ones (hundreds of
# vectors, hypothesis, a whole method workflow), once at the end, on the spec that holds every step's change.
SPEC_READERS = (
    "tests/pipeline/test_retry_module.py",
    "tests/pipeline/test_spec_audit.py",
    "tests/pipeline/test_lenient_models.py",
    "tests/pipeline/test_stability.py",
    "tests/pipeline/test_type_pages.py",
    "tests/pipeline/test_maintainer_page.py",
    "tests/upstream/test_rfd_audit.py",
    "tests/upstream/test_lenience.py",
    "tests/upstream/test_meta.py",
    "tests/upstream/test_audit.py",
    "tests/upstream/test_compat_baseline.py",
    "tests/diff/test_cli.py",
    "runtime/tests/test_client.py",
)
# What reads the key's own facts (its bounds, vectors and messages): after the step that changes its maximum.
KEY_READERS = (
    "tests/pipeline/test_idempotency_key.py",
    "runtime/tests/test_ledger.py",
    "tests/sdk/test_python.py",
)
FINAL_READERS = (
    "tests/upstream/test_method_workflow.py",
    # what reads the envelopes' order, the reader's routes and the wire names a new method brings
    "tests/pipeline/test_reader.py",
    "tests/pipeline/test_wire_names.py",
    "tests/pipeline/test_salvage_bounds.py",
    "tests/pipeline/test_schema_compare.py",
    "tests/pipeline/test_upstream_form.py",  # the published form of the unions, a renamed params type among them
    "tests/faults/test_bad_spec_files.py",
    "runtime/tests/test_conformance.py",
    "tests/diff/test_properties.py",
    "runtime/tests/test_client_vectors.py",
    "runtime/tests/test_key_vectors.py",
)

ALL_READERS = SPEC_READERS + KEY_READERS + FINAL_READERS

if __name__ == "__main__":
    print("\n".join(ALL_READERS))
