"""Reading: what the toolchain reads from outside, as data with positions.

The spec directory's files read once as bytes (specfiles), each parsed into data that remembers the line and column
of every value (loader), the parse cache that spares unchanged files both steps (parsecache), and ACP's published
schemas: the pinned npm releases (published), fetched with their integrity checked (fetch) and read as strict
JSON (jsonfile).
"""
