"""The ACP v2 retry-layer spec toolchain: spec/ in, generated/ and site/reference/ out.

Stages, one module each: loader (YAML with positions) -> structure (meta-schemas) -> semantics (meaning,
model building) -> model (frozen) -> render/* (one module per artifact) -> writer (write or compare).
"""
