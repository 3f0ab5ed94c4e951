"""Hostile input: the HTTP API fuzzed from its own OpenAPI document, and the tool argument validator."""
