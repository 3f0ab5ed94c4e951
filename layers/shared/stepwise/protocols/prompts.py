"""The words each protocol says to its model: the tool list, the output format, the final-round order."""

from __future__ import annotations

import json
from typing import NamedTuple

from stepwise.models.messages import ToolSpec


class ProtocolWording(NamedTuple):
    """What a protocol tells the model about its format."""

    tool_format: str
    """How to call a tool and how to answer, when tools are offered."""
    final_format: str
    """How to write the final answer; the only format shown in the final round."""


REACT_JSON = ProtocolWording(
    tool_format=(
        "To use a tool, write your reasoning after 'Thought:', then exactly one JSON block, and stop:\n"
        "Thought: <your reasoning>\n"
        "```json\n"
        '{"action": "<tool name>", "action_input": {<the tool arguments as a JSON object>}}\n'
        "```\n"
        "You will then receive 'Observation: <the tool result>'. Never write the observation yourself.\n"
        "When you can answer, write:\n"
        "Thought: <your reasoning>\n"
        "```json\n"
        '{"action": "Final Answer", "action_input": "<your answer>"}\n'
        "```"
    ),
    final_format=(
        'Thought: <your reasoning>\n```json\n{"action": "Final Answer", "action_input": "<your answer>"}\n```'
    ),
)

REACT_TEXT = ProtocolWording(
    tool_format=(
        "To use a tool, write exactly these lines and stop:\n"
        "Thought: <your reasoning>\n"
        "Action: <tool name>\n"
        "Action Input: <the tool arguments as a JSON object>\n"
        "You will then receive 'Observation: <the tool result>'. Never write the observation yourself.\n"
        "When you can answer, write:\n"
        "Thought: <your reasoning>\n"
        "Final Answer: <your answer>"
    ),
    final_format="Thought: <your reasoning>\nFinal Answer: <your answer>",
)

XML = ProtocolWording(
    tool_format=(
        "To use a tool, write exactly these tags and stop:\n"
        "<thought>your reasoning</thought>\n"
        '<action>tool_name(parameter="value", other_parameter=3)</action>\n'
        'Quote text values with double quotes and escape quotes inside them as \\".\n'
        "You will then receive <observation>the tool result</observation>. Never write it yourself.\n"
        "When you can answer, write:\n"
        "<thought>your reasoning</thought>\n"
        "<final_answer>your answer</final_answer>"
    ),
    final_format="<thought>your reasoning</thought>\n<final_answer>your answer</final_answer>",
)

MARKERS = ProtocolWording(
    tool_format=(
        "To use a tool, write exactly these blocks and stop:\n"
        "/*PLANNING*/ your reasoning /*END_PLANNING*/\n"
        '/*ACTION*/ {"tool": "<tool name>", "parameters": {<the tool arguments as a JSON object>}} '
        "/*END_ACTION*/\n"
        "You will then receive 'Observation: <the tool result>'. Never write the observation yourself.\n"
        "When you can answer, write:\n"
        "/*PLANNING*/ your reasoning /*END_PLANNING*/\n"
        "/*FINAL_ANSWER*/ your answer /*END_FINAL_ANSWER*/"
    ),
    final_format="/*PLANNING*/ your reasoning /*END_PLANNING*/\n/*FINAL_ANSWER*/ your answer /*END_FINAL_ANSWER*/",
)

NATIVE = ProtocolWording(
    tool_format="Call a tool through the tools interface, or reply with your final answer as plain text.",
    final_format="Reply with your final answer as plain text.",
)

FINAL_ROUND_ORDER = (
    "You cannot use tools any more. Answer the original question now from the information you already "
    "have; if it is incomplete, give the best answer you can and say what is missing. Use this format:\n"
)


def render_tool_list(tools: list[ToolSpec]) -> str:
    """The tools as the system prompt lists them: name, description and JSON-schema parameters."""
    lines = ["You can use these tools:"]
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description.strip() or '(no description)'}")
        lines.append(f"  Parameters (JSON schema): {json.dumps(tool.parameters, ensure_ascii=False)}")
    return "\n".join(lines)


def text_system_prompt(system_prompt: str, tools: list[ToolSpec], wording: ProtocolWording) -> str:
    """A text protocol's system prompt: the profile's prompt, then the tools and the exact format."""
    parts = [system_prompt.strip()] if system_prompt.strip() else []
    if tools:
        parts.append(render_tool_list(tools))
        parts.append(wording.tool_format)
    else:
        parts.append("Answer in this format:\n" + wording.final_format)
    return "\n\n".join(parts)


def final_round_order(wording: ProtocolWording) -> str:
    """The instruction appended in the final round: answer now, in the final-answer format."""
    return FINAL_ROUND_ORDER + wording.final_format


def corrective_text(problem: str, wording: ProtocolWording) -> str:
    """The observation sent back after a parse error: what was wrong, then the exact expected format."""
    return f"{problem.strip()}\nReply again using exactly this format.\n{wording.tool_format}"
