"""Token counts read from a provider's reply as leniently as its own SDK reads them, and checked before use.

The OpenAI SDK builds its response objects without validating them, so a count sent as `"12"`, `12.0` or
`null` reaches its user as sent; servers do send such values, and some send no usage at all. They are read
here as whole numbers wherever they are one (numeric strings and floats included); a missing `total_tokens`
or details object is no problem, as nothing depends on it.

What cannot be a real count is not trusted: a count that is not a number, is negative, is beyond any model's
window, or contradicts the others (more cached tokens than prompt tokens, more reasoning tokens than output
tokens), and a usage whose prompt or output count is missing. Such a usage comes back with its counts at 0 and
`Usage.unreliable` saying why; the steps replace it with their estimate (`stepwise.steps.usage_estimate`) and
the trace says so. A usage problem never makes a reply unreadable.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

from stepwise.models.messages import Usage

# Twice the largest context window any model offers (10 million tokens): no single call counts more.
MAX_PLAUSIBLE_TOKENS = 20_000_000


class _Counts:
    """Reads counts one by one, noting why each unusable one could not be used."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def read(self, name: str, value: Any, *, required: bool = False) -> int | None:
        """`value` as a whole number of tokens; None when it is absent or unusable (the latter noted)."""
        if value is None:
            if required:
                self.problems.append(f"{name} is missing")
            return None
        count = whole_number(value)
        if count is None:
            # what was sent is not repeated: a hostile server's text would reach the trace and the logs
            self.problems.append(f"{name} is not a number (a {type(value).__name__})")
        elif count < 0:
            self.problems.append(f"{name} is negative ({count})")
        elif count > MAX_PLAUSIBLE_TOKENS:
            self.problems.append(f"{name} is beyond any model's window ({count})")
        else:
            return count
        return None

    def unreliable(self, counted: Usage) -> Usage:
        """`counted` when nothing was wrong, else a usage of zeros saying what was."""
        if not self.problems:
            return counted
        return Usage(unreliable="; ".join(self.problems))


def whole_number(value: Any) -> int | None:
    """An integer, a finite float (rounded) or a string holding either, as an int; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return None
    if isinstance(value, Real):
        number = float(value)
        return round(number) if math.isfinite(number) else None
    return None


def _detail(usage: dict[str, Any], details: tuple[str, ...], name: str) -> Any:
    """`usage[<details>][name]` from the first of the `details` objects that holds it (not null); None else."""
    for key in details:
        found = usage.get(key)
        if isinstance(found, dict) and found.get(name) is not None:
            return found[name]
    return None


def _first_present(container: dict[str, Any], *names: str) -> tuple[str, Any]:
    """The first of `names` that `container` holds (not null), with its value; the first name otherwise."""
    for name in names:
        if container.get(name) is not None:
            return name, container[name]
    return names[0], None


def output_with_reasoning(completion_tokens: int, reasoning_tokens: int, prompt_tokens: int, total: int | None) -> int:
    """The output tokens of a reply, its reasoning included.

    OpenAI's `completion_tokens` already holds the reasoning tokens; a server whose total shows they were
    counted apart (total = prompt + completion + reasoning) has them added.
    """
    if reasoning_tokens and total is not None and total == prompt_tokens + completion_tokens + reasoning_tokens:
        return completion_tokens + reasoning_tokens
    return completion_tokens


def openai_usage(usage: Any) -> Usage:
    """The `usage` of an OpenAI-style reply (`prompt_tokens`, `completion_tokens`, their details; the
    `input_tokens` / `output_tokens` names of the Responses API and DashScope too)."""
    if not isinstance(usage, dict):
        return Usage(unreliable="the reply has no usage" if usage is None else "usage is not an object")
    counts = _Counts()
    prompt = counts.read(*_first_present(usage, "prompt_tokens", "input_tokens"), required=True)
    completion = counts.read(*_first_present(usage, "completion_tokens", "output_tokens"), required=True)
    # Only `output_with_reasoning` looks at the total: an unreadable one is as good as none.
    total = _Counts().read("total_tokens", usage.get("total_tokens"))
    prompt_details = ("prompt_tokens_details", "input_tokens_details")
    cached = counts.read("cached_tokens", _detail(usage, prompt_details, "cached_tokens")) or 0
    output_details = ("completion_tokens_details", "output_tokens_details")
    reasoning = counts.read("reasoning_tokens", _detail(usage, output_details, "reasoning_tokens")) or 0
    if prompt is None or completion is None:
        return counts.unreliable(Usage())
    output = output_with_reasoning(completion, reasoning, prompt, total)
    counted = Usage(input_tokens=prompt, output_tokens=output, cache_read_tokens=cached, reasoning_tokens=reasoning)
    return _consistent(counts, counted)


def converse_usage(usage: Any) -> Usage:
    """The `usage` of a Bedrock Converse reply; its `inputTokens` leave out the cache reads and writes, which
    `Usage.input_tokens` counts."""
    if not isinstance(usage, dict):
        return Usage(unreliable="the reply has no usage" if usage is None else "usage is not an object")
    counts = _Counts()
    fresh = counts.read("inputTokens", usage.get("inputTokens"), required=True)
    output = counts.read("outputTokens", usage.get("outputTokens"), required=True)
    cache_read = counts.read("cacheReadInputTokens", usage.get("cacheReadInputTokens")) or 0
    cache_write = counts.read("cacheWriteInputTokens", usage.get("cacheWriteInputTokens")) or 0
    if fresh is None or output is None:
        return counts.unreliable(Usage())
    return _consistent(
        counts,
        Usage(
            input_tokens=fresh + cache_read + cache_write,
            output_tokens=output,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        ),
    )


def _consistent(counts: _Counts, usage: Usage) -> Usage:
    """`usage` when its counts agree with each other (and nothing else was wrong), else why not."""
    if usage.input_tokens == 0:
        counts.problems.append("the prompt is counted as 0 tokens (a request is never empty)")
    if usage.input_tokens > MAX_PLAUSIBLE_TOKENS:
        counts.problems.append(f"the prompt is beyond any model's window ({usage.input_tokens})")
    if usage.cache_read_tokens + usage.cache_write_tokens > usage.input_tokens:
        counts.problems.append(
            f"more cached tokens ({usage.cache_read_tokens + usage.cache_write_tokens}) than prompt tokens "
            f"({usage.input_tokens})"
        )
    if usage.reasoning_tokens > usage.output_tokens:
        counts.problems.append(
            f"more reasoning tokens ({usage.reasoning_tokens}) than output tokens ({usage.output_tokens})"
        )
    return counts.unreliable(usage)
