"""The limits of one model reply: applied by the provider layer before a reply is stored
(`llm/reply_repair.py`), and read by Parse to tell the model about a call it refused
(`steps/reply_problems.py`).

A reply's text (and unsigned reasoning) is cut at `MAX_REPLY_CHARS` with a marker. Its calls' arguments
cannot be cut without changing what a call does, so the calls past `MAX_ARGUMENTS_CHARS` are refused:
their arguments are replaced by `{OVERSIZED_ARGUMENTS_KEY: <their size>}`.
"""

from __future__ import annotations

from stepwise.models.messages import ToolCall

# Far beyond any useful answer or action, far below what a store item holds (DynamoDB: 400 KB).
MAX_REPLY_CHARS = 60_000
# The arguments of all the calls of one reply together, as compact JSON text: the same budget as its text,
# so a reply's text and calls both fit one item however many calls it makes.
MAX_ARGUMENTS_CHARS = 60_000
# A refused call's arguments are replaced by this key alone, holding the size they had (in characters).
OVERSIZED_ARGUMENTS_KEY = "_oversized_arguments"


def refused_arguments(call: ToolCall) -> int | None:
    """The size (in characters) of the arguments refused for `call`, or None if they were kept."""
    size = call.arguments.get(OVERSIZED_ARGUMENTS_KEY) if len(call.arguments) == 1 else None
    return size if isinstance(size, int) and not isinstance(size, bool) else None
