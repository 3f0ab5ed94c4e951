"""Parse time per protocol on the worst inputs found for it, at 10 KB, 100 KB and 1 MB.

Each protocol is timed on several pathological replies (a pattern repeated to the size); the table shows
the slowest pattern per protocol. Parsing is linear and capped at `MAX_PARSED_CHARS`, so the 1 MB figure
should stay within about 10x the 100 KB one.
"""

from __future__ import annotations

import time
from typing import Any

from stepwise.protocols import parse_completion
from stepwise.protocols.reading import MAX_PARSED_CHARS

SIZES = (10_000, 100_000, 1_000_000)
# The best of a few runs: the figure is the parser's cost, not the machine's noise.
REPEATS = 3
# Patterns that once made a reader rescan: unclosed objects, braces, comments, fences, labels and tags.
PATTERNS: dict[str, tuple[str, ...]] = {
    "react_json": ('{"a":', "{", "{/*", "{'", "```json\n{", "Action: x\n", '{"action": "x", "action_input": {"a":'),
    "react_text": ("Action: x\n", "Action: x\nAction Input: {", "Final Answer: ", "Action:\n```json\n{"),
    "xml": ("<action>", "<thought>", '<action>f("a", ', "<tool_input>", "<tool>x</tool><tool_input>{"),
    "markers": ("/*ACTION*/", "/*ACTION*/ {", "/*PLANNING*/", '/*ACTION*/ {"tool": "x", "parameters": {"a":'),
    # native calls: the pattern is the arguments string of a tool call in an OpenAI response
    "function_calling": ('{"a":', "{", '"', "{/*"),
}


def _repeat(pattern: str, size: int) -> str:
    return (pattern * (size // len(pattern) + 1))[:size]


def _seconds(text: str, protocol: str) -> float:
    completion: str | dict[str, Any] = text
    if protocol == "function_calling":
        call = {"id": "c", "type": "function", "function": {"name": "search", "arguments": text}}
        completion = {"choices": [{"message": {"content": None, "tool_calls": [call]}}]}
    timings = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        parse_completion(completion, protocol)
        timings.append(time.perf_counter() - started)
    return min(timings)


def measure() -> dict[str, tuple[str, list[float]]]:
    """For each protocol: its slowest pattern and the parse time in seconds at each size."""
    results: dict[str, tuple[str, list[float]]] = {}
    for protocol, patterns in PATTERNS.items():
        timed = [(pattern, [_seconds(_repeat(pattern, size), protocol) for size in SIZES]) for pattern in patterns]
        results[protocol] = max(timed, key=lambda item: item[1][-1])
    return results


def main() -> None:
    """Print the parse-time table."""
    results = measure()
    print(f"Parse time per protocol, slowest pattern found (replies past {MAX_PARSED_CHARS} characters are cut)")
    print("| protocol | worst pattern (repeated) | 10 KB ms | 100 KB ms | 1 MB ms | 1 MB / 100 KB |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for protocol, (pattern, seconds) in results.items():
        small, medium, large = (round(value * 1000, 1) for value in seconds)
        ratio = seconds[2] / seconds[1] if seconds[1] else 0.0
        print(f"| {protocol} | `{pattern!r}` | {small} | {medium} | {large} | {ratio:.1f} |")


if __name__ == "__main__":
    main()
