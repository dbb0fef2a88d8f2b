"""`make bench`: speed figures as ratios against a reference measured in the same run.

Each `bench/bench_*.py` module has `run() -> list[Ratio]`. Absolute times are printed for context only; the
goal is stated on the ratio, which is far less sensitive to a shared, noisy machine than a time.
"""
