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
