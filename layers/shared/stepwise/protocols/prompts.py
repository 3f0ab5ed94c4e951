"""The words each protocol says to its model: the tool list, the output format, the final-round order.

English here; Chinese in prompts_zh.py. A profile's ``language`` picks one (`wording_for`, `sentences_for`,
`output_sentences_for`).
"""

from __future__ import annotations

import json

from stepwise.config.language import Language
from stepwise.models.messages import ToolSpec
from stepwise.protocols import prompts_zh
from stepwise.protocols.wording import OutputSentences, ProtocolWording, Sentences

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

SENTENCES = Sentences(
    tool_list="You can use these tools:",
    parameters="Parameters (JSON schema):",
    no_description="(no description)",
    answer_format="Answer in this format:\n",
    final_round=(
        "You cannot use tools any more. Answer the original question now from the information you already "
        "have; if it is incomplete, give the best answer you can and say what is missing. Use this format:\n"
    ),
    corrective_lead="",
    corrective_order="Reply again using exactly this format.",
    limit_summary="The run stopped ({reason}) before the model gave a final answer.",
    limit_observations="What the tools returned:",
    limit_no_observation="No tool returned anything.",
)

OUTPUT_SENTENCES = OutputSentences(
    json_only=(
        "Give your final answer as one JSON value that matches this JSON Schema:\n{schema}\n\n"
        "Your final answer was:\n{answer}\n\nReply with the JSON only: no explanation and no code fence."
    ),
    by_tool=(
        "Give your final answer by calling the tool {tool}; its arguments must match its parameters schema.\n\n"
        "Your final answer was:\n{answer}"
    ),
    tool_description="Submit the final answer.",
    retry="That reply does not match the schema: {problem}.\nReply again with corrected JSON only.",
    tool_result="Result of tool {name}:\n{content}",
    tool_called="(called tool {name} with {arguments})",
)

_WORDINGS: dict[str, dict[Language, ProtocolWording]] = {
    "react_json": {"en": REACT_JSON, "zh": prompts_zh.REACT_JSON},
    "react_text": {"en": REACT_TEXT, "zh": prompts_zh.REACT_TEXT},
    "xml": {"en": XML, "zh": prompts_zh.XML},
    "markers": {"en": MARKERS, "zh": prompts_zh.MARKERS},
    "function_calling": {"en": NATIVE, "zh": prompts_zh.NATIVE},
}


def wording_for(protocol: str, language: Language) -> ProtocolWording:
    """A protocol's wording in a language."""
    return _WORDINGS[protocol][language]


def sentences_for(language: Language) -> Sentences:
    """The sentences around the formats in a language."""
    return prompts_zh.SENTENCES if language == "zh" else SENTENCES


def output_sentences_for(language: Language) -> OutputSentences:
    """What the structured-output call says, in a language."""
    return prompts_zh.OUTPUT_SENTENCES if language == "zh" else OUTPUT_SENTENCES


def render_tool_list(tools: list[ToolSpec], language: Language = "en") -> str:
    """The tools as the system prompt lists them: name, description and JSON-schema parameters."""
    sentences = sentences_for(language)
    lines = [sentences.tool_list]
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description.strip() or sentences.no_description}")
        lines.append(f"  {sentences.parameters} {json.dumps(tool.parameters, ensure_ascii=False)}")
    return "\n".join(lines)


def text_system_prompt(
    system_prompt: str, tools: list[ToolSpec], wording: ProtocolWording, language: Language = "en"
) -> str:
    """A text protocol's system prompt: the profile's prompt, then the tools and the exact format."""
    parts = [system_prompt.strip()] if system_prompt.strip() else []
    if tools:
        parts.append(render_tool_list(tools, language))
        parts.append(wording.tool_format)
    else:
        parts.append(sentences_for(language).answer_format + wording.final_format)
    return "\n\n".join(parts)


def final_round_order(wording: ProtocolWording, language: Language = "en") -> str:
    """The instruction appended in the final round: answer now, in the final-answer format."""
    return sentences_for(language).final_round + wording.final_format


def corrective_text(problem: str, wording: ProtocolWording, language: Language = "en") -> str:
    """The observation sent back after a parse error: what was wrong, then the exact expected format."""
    sentences = sentences_for(language)
    return f"{sentences.corrective_lead}{problem.strip()}\n{sentences.corrective_order}\n{wording.tool_format}"
