"""The shapes of what Stepwise says to a model, filled in once per language (prompts.py, prompts_zh.py)."""

from __future__ import annotations

from typing import NamedTuple


class ProtocolWording(NamedTuple):
    """What a protocol tells the model about its format."""

    tool_format: str
    """How to call a tool and how to answer, when tools are offered."""
    final_format: str
    """How to write the final answer; the only format shown in the final round."""


class Sentences(NamedTuple):
    """The sentences around the formats, shared by every protocol of one language."""

    tool_list: str
    parameters: str
    no_description: str
    answer_format: str
    final_round: str
    corrective_lead: str
    corrective_order: str
    limit_summary: str
    """Said when a run stopped without a final answer; ``{reason}`` is the stop reason."""
    limit_observations: str
    limit_no_observation: str


class OutputSentences(NamedTuple):
    """What the structured-output call says (`stepwise.steps.structured_output`), in one language.

    Each is a `str.format` template; the values filled in (a schema, an answer) are never read as one.
    """

    json_only: str
    """Asks for the answer as JSON: ``{schema}``, ``{answer}``."""
    by_tool: str
    """Asks for the answer as a call of the tool ``{tool}``: ``{answer}``."""
    tool_description: str
    retry: str
    """Sends a rejected reply back: ``{problem}``."""
    tool_result: str
    """A tool's result in the plain conversation: ``{name}``, ``{content}``."""
    tool_called: str
    """A call in the plain conversation: ``{name}``, ``{arguments}``."""
