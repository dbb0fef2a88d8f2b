"""Writing: the rendered files on disk, replaced per output root atomically, or compared with what is there.

`writer` writes or compares; `cache` keeps what `generate` remembers between runs in `.cache/` (the no-op
shortcut and each renderer's record).
"""
