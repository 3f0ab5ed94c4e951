"""Evaluation: suites of cases run through the real state machine, their checks, reports, and replay diffs."""
