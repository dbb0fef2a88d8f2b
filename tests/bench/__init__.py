"""Tests of the benchmarks' own harnesses (what `make bench` runs is not timed here, only checked to work)."""
