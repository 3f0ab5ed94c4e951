"""Benchmarks: each prints a table of figures; none asserts a time."""
