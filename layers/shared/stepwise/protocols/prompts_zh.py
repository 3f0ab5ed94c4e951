"""The words each protocol says to its model, in Chinese (a profile's ``language: zh``, Higress ``CH``).

The labels and tags themselves stay as in English (``Thought:``, ``<action>``, ``/*ACTION*/``): the parsers
and the stop sequences rely on them, and Chinese models write them reliably when shown.
"""

# Chinese punctuation (full-width comma, colon, parentheses) is correct in Chinese text.
# ruff: noqa: RUF001

from __future__ import annotations

from stepwise.protocols.wording import OutputSentences, ProtocolWording, Sentences

REACT_JSON = ProtocolWording(
    tool_format=(
        "需要使用工具时，先在 'Thought:' 后写出你的推理，再写且只写一个 JSON 代码块，然后停止：\n"
        "Thought: <你的推理>\n"
        "```json\n"
        '{"action": "<工具名>", "action_input": {<工具参数，一个 JSON 对象>}}\n'
        "```\n"
        "之后你会收到 'Observation: <工具结果>'。不要自己编写 Observation。\n"
        "可以回答时，写：\n"
        "Thought: <你的推理>\n"
        "```json\n"
        '{"action": "Final Answer", "action_input": "<你的回答>"}\n'
        "```"
    ),
    final_format='Thought: <你的推理>\n```json\n{"action": "Final Answer", "action_input": "<你的回答>"}\n```',
)

REACT_TEXT = ProtocolWording(
    tool_format=(
        "需要使用工具时，严格写出以下几行，然后停止：\n"
        "Thought: <你的推理>\n"
        "Action: <工具名>\n"
        "Action Input: <工具参数，一个 JSON 对象>\n"
        "之后你会收到 'Observation: <工具结果>'。不要自己编写 Observation。\n"
        "可以回答时，写：\n"
        "Thought: <你的推理>\n"
        "Final Answer: <你的回答>"
    ),
    final_format="Thought: <你的推理>\nFinal Answer: <你的回答>",
)

XML = ProtocolWording(
    tool_format=(
        "需要使用工具时，严格写出以下标签，然后停止：\n"
        "<thought>你的推理</thought>\n"
        '<action>tool_name(parameter="value", other_parameter=3)</action>\n'
        '文本参数用双引号括起来，其中的双引号写作 \\"。\n'
        "之后你会收到 <observation>工具结果</observation>。不要自己编写它。\n"
        "可以回答时，写：\n"
        "<thought>你的推理</thought>\n"
        "<final_answer>你的回答</final_answer>"
    ),
    final_format="<thought>你的推理</thought>\n<final_answer>你的回答</final_answer>",
)

MARKERS = ProtocolWording(
    tool_format=(
        "需要使用工具时，严格写出以下区块，然后停止：\n"
        "/*PLANNING*/ 你的推理 /*END_PLANNING*/\n"
        '/*ACTION*/ {"tool": "<工具名>", "parameters": {<工具参数，一个 JSON 对象>}} /*END_ACTION*/\n'
        "之后你会收到 'Observation: <工具结果>'。不要自己编写 Observation。\n"
        "可以回答时，写：\n"
        "/*PLANNING*/ 你的推理 /*END_PLANNING*/\n"
        "/*FINAL_ANSWER*/ 你的回答 /*END_FINAL_ANSWER*/"
    ),
    final_format="/*PLANNING*/ 你的推理 /*END_PLANNING*/\n/*FINAL_ANSWER*/ 你的回答 /*END_FINAL_ANSWER*/",
)

NATIVE = ProtocolWording(
    tool_format="通过工具接口调用工具，或直接用纯文本给出最终回答。",
    final_format="请用纯文本给出你的最终回答。",
)

SENTENCES = Sentences(
    tool_list="你可以使用以下工具：",
    parameters="参数（JSON Schema）：",
    no_description="（无描述）",
    answer_format="请按以下格式回答：\n",
    final_round=(
        "你不能再使用工具了。请根据已有的信息立即回答最初的问题；如果信息不完整，给出你能给出的最佳回答，"
        "并说明缺少什么。请使用以下格式：\n"
    ),
    corrective_lead="你的上一条回复无法读取：",
    corrective_order="请严格按照以下格式重新回复。",
    limit_summary="在给出最终回答之前，运行已停止（{reason}）。",
    limit_observations="工具返回的结果：",
    limit_no_observation="没有任何工具返回结果。",
)

OUTPUT_SENTENCES = OutputSentences(
    json_only=(
        "请把你的最终回答写成一个符合以下 JSON Schema 的 JSON 值：\n{schema}\n\n"
        "你的最终回答是：\n{answer}\n\n只回复 JSON：不要解释，也不要使用代码块。"
    ),
    by_tool="请调用工具 {tool} 给出你的最终回答；它的参数必须符合该工具的参数 schema。\n\n你的最终回答是：\n{answer}",
    tool_description="提交最终回答。",
    retry="这条回复不符合 schema：{problem}。\n请只回复修正后的 JSON。",
    tool_result="工具 {name} 的结果：\n{content}",
    tool_called="（调用了工具 {name}，参数为 {arguments}）",
)
