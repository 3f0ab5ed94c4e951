"""Native calls a server without a tool-call parser leaves in the text are read as the calls they are."""

from __future__ import annotations

import pytest

from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols import parse_completion
from stepwise.protocols.text_tool_calls import with_written_calls

TOOLS = [
    ToolSpec(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
    ToolSpec(name="bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}}),
]
HERMES = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
# vllm-project/vllm tests/reasoning/test_qwen3_reasoning_parser.py TOOL_CALL_BODY (Qwen3-Coder's markup)
QWEN3_CODER = (
    "<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n</function>\n</tool_call>"
)
MISTRAL = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'


@pytest.mark.parametrize(
    ("text", "call"),
    [
        (HERMES, ("get_weather", {"city": "Paris"})),
        ("I need to read the file.\n\n" + QWEN3_CODER, ("bash", {"command": "cat /etc/hosts"})),
        (MISTRAL, ("get_weather", {"city": "Paris"})),
        ("<think>The weather tool.</think>\n" + HERMES, ("get_weather", {"city": "Paris"})),
    ],
)
def test_a_call_written_in_a_models_markup_is_a_tool_call(text: str, call: tuple[str, dict[str, str]]) -> None:
    # Given a native-tools reply whose call the server left in the text / When it is parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then it is that call, not a final answer holding markup
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [call]


@pytest.mark.parametrize(
    "text",
    [
        '<function_calls>\n[{"name": "get_weather", "params": {"city": "Paris"}}]',
        '{ "arguments": {"city": "Paris"}, "function": "get_weather"} <|im_end|>',
    ],
)
def test_a_call_object_with_its_arguments_under_params_or_its_name_under_function_is_the_call(text: str) -> None:
    # Given a call object whose arguments are under "params" (Hermes 2 Pro) or whose name is a "function"
    # string (LocalAI's constrained calls) / When it is parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then it is that call with its arguments
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize(
    "text",
    [
        "[get_weather(city='Paris')]\n[bash(command='ls')]",
        "get_weather(city='Paris')\nbash(command='ls')<end_of_turn>",
    ],
)
def test_python_calls_one_list_per_line_or_without_brackets_are_all_read(text: str) -> None:
    # Given a reply of Python calls written one list per line, or with no brackets at all (BFCL's recorded
    # Gemma 4 and AIREV fine-tunes) / When it is parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then every call is read, in order
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [
        ("get_weather", {"city": "Paris"}),
        ("bash", {"command": "ls"}),
    ]


def test_a_python_tuple_written_as_a_value_is_a_list() -> None:
    # Given a Python call whose value is a tuple (BFCL's recorded Gemma 4 and AIREV replies)
    text = "[get_weather(city='Paris', at=(48.8584, 2.2945))]"
    # When it is parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then the tuple's items are a list, as Python reads them, not the text of the tuple
    assert isinstance(decision, ToolCalls)
    assert decision.calls[0].arguments == {"city": "Paris", "at": [48.8584, 2.2945]}


def test_the_text_before_the_markup_is_the_thought_and_the_stored_turn_gets_native_calls() -> None:
    # Given a reply with a remark, then a call in markup / When it is made native (as LLMCall stores it)
    native = with_written_calls(Completion(content=HERMES))
    # Then the remark is the text and the call is a native one
    assert native.content == "Let me check."
    assert [(call.id, call.name, call.arguments) for call in native.tool_calls] == [
        ("call_0", "get_weather", {"city": "Paris"})
    ]


def test_broken_arguments_in_markup_are_reported_not_answered() -> None:
    # Given a call whose arguments are not JSON / When it is parsed
    decision = parse_completion(
        '<tool_call>{"name": "get_weather", "arguments": "{city: "}</tool_call>', "function_calling", TOOLS
    )
    # Then the model is told the arguments could not be read
    assert isinstance(decision, ParseError) and "not a valid JSON object" in decision.message


def test_prose_that_names_the_markup_is_still_the_answer() -> None:
    # Given an answer that only talks about the tag / When it is parsed / Then it is the answer
    decision = parse_completion("Qwen wraps calls in <tool_call> tags.", "function_calling", TOOLS)
    assert decision == FinalAnswer(text="Qwen wraps calls in <tool_call> tags.")


# DeepSeek's special tokens: full-width bars around words joined by U+2581.
DS = {
    word: "<\uff5c" + word.replace(" ", "\u2581") + "\uff5c>"
    for word in ("tool calls begin", "tool call begin", "tool sep", "tool call end", "tool calls end")
}
# One call per family of markup, written the way each family's chat template writes it (see tool_call_markup).
FAMILIES = {
    "glm": "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Lyon</arg_value>\n</tool_call>",
    "kimi": "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0 "
    '<|tool_call_argument_begin|>{"city": "Lyon"}<|tool_call_end|><|tool_calls_section_end|>',
    "deepseek_v3": f"{DS['tool calls begin']}{DS['tool call begin']}function{DS['tool sep']}get_weather\n```json\n"
    f'{{"city": "Lyon"}}\n```{DS["tool call end"]}{DS["tool calls end"]}',
    "deepseek_v31": f'{DS["tool calls begin"]}{DS["tool call begin"]}get_weather{DS["tool sep"]}{{"city": "Lyon"}}'
    f"{DS['tool call end']}{DS['tool calls end']}",
    "harmony": '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Lyon"}<|call|>',
    "llama3_json": '{"name": "get_weather", "parameters": {"city": "Lyon"}}',
    "llama3_python_tag": '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Lyon"}}',
    "pythonic": "[get_weather(city='Lyon')]",
    "llama4": '<|python_start|>[get_weather(city="Lyon")]<|python_end|>',
    "granite": '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Lyon"}}]',
    "json_list_in_tag": '<tool_call>[{"name": "get_weather", "arguments": {"city": "Lyon"}}]</tool_call>',
    "internlm": '<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"city": "Lyon"}}<|action_end|>',
    "jamba": '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Lyon"}}]</tool_calls>',
    "minimax": '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Lyon"}}\n</tool_calls>',
    "minimax_m2": '<minimax:tool_call><invoke name="get_weather"><parameter name="city">Lyon</parameter></invoke>'
    "</minimax:tool_call>",
    "seed_oss": "<seed:tool_call><function=get_weather><parameter=city>Lyon</parameter></function></seed:tool_call>",
    "mistral_v11": '[TOOL_CALLS]get_weather[ARGS]{"city": "Lyon"}',
    "phi4_mini": 'functools[{"name": "get_weather", "arguments": {"city": "Lyon"}}]',
    "xlam_fenced": '```json\n[{"name": "get_weather", "arguments": {"city": "Lyon"}}]\n```',
    "lfm2": "<|tool_call_start|>[get_weather(city='Lyon')]<|tool_call_end|>",
    "openhands": "<function=get_weather>\n<parameter=city>Lyon</parameter>\n</function>",
    "claude_prompt_based": "<function_calls><invoke><tool_name>get_weather</tool_name><parameters><city>Lyon</city>"
    "</parameters></invoke></function_calls>",
    "deepseek_v4_invoke_name": "<function_call>\n<invoke_name>get_weather</invoke_name>\n<parameters>\n"
    "<city>Lyon</city>\n</parameters>\n</function_call>",
    "minimax_m3": ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">\n]<]minimax[>[<city>Lyon'
    "]<]minimax[>[</city>\n]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
    "gemma4": '<|tool_call>call:get_weather{city:<|"|>Lyon<|"|>}<tool_call|>',
    "deepseek_v32_dsml": '<\uff5cDSML\uff5cfunction_calls>\n<\uff5cDSML\uff5cinvoke name="get_weather">\n'
    '<\uff5cDSML\uff5cparameter name="city" string="true">Lyon</\uff5cDSML\uff5cparameter>\n'
    "</\uff5cDSML\uff5cinvoke>\n</\uff5cDSML\uff5cfunction_calls>",
    "apertus": '<|tools_prefix|>[{"get_weather": {"city": "Lyon"}}]<|tools_suffix|>',
    "gigachat": '<|function_call|>{"name": "get_weather", "arguments": {"city": "Lyon"}}',
    "function_gemma": "<start_function_call>call:get_weather{city:<escape>Lyon<escape>}<end_function_call>",
    "qwen_agent": '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "Lyon"}\n✿RESULT✿',
    "nemotron": '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Lyon"}}]</TOOLCALL>',
    "cohere": '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Lyon"}}]'
    "<|END_ACTION|>",
    "olmo3": "<function_calls>get_weather(city='Lyon')</function_calls>",
    "step3": '<\uff5ctool_calls_begin\uff5c><\uff5ctool_call_begin\uff5c><steptml:invoke name="get_weather">'
    '<steptml:parameter name="city">Lyon</steptml:parameter></steptml:invoke><\uff5ctool_call_end\uff5c>',
}


@pytest.mark.parametrize("markup", FAMILIES.values(), ids=FAMILIES.keys())
def test_each_familys_markup_is_read_as_its_call(markup: str) -> None:
    # Given a remark, then a call in one model family's markup / When the native reply is parsed
    decision = parse_completion("I will look it up.\n" + markup, "function_calling", TOOLS)
    # Then it is that call, the remark its thought
    assert isinstance(decision, ToolCalls)
    assert [(call.name, call.arguments) for call in decision.calls] == [("get_weather", {"city": "Lyon"})]
    assert decision.thought == "I will look it up."


def test_a_harmony_call_beside_a_final_channel_is_still_the_call() -> None:
    # Given gpt-oss served raw: thinking, a call on the commentary channel, then a final-channel message
    text = (
        "<|channel|>analysis<|message|>Use the weather tool.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.get_weather <|constrain|>json<|message|>{"city": "Lyon"}<|call|>'
        "<|start|>assistant<|channel|>final<|message|>Checking the weather.<|return|>"
    )
    # When it is parsed / Then the call is what the model decided, not the final channel's text
    decision = parse_completion(text, "function_calling", TOOLS)
    assert isinstance(decision, ToolCalls)
    assert [(call.name, call.arguments) for call in decision.calls] == [("get_weather", {"city": "Lyon"})]


@pytest.mark.parametrize(
    "answer",
    [
        '{"name": "Ada Lovelace", "born": 1815}',
        "[Smith (2019), Jones (2021)]",
        "Phi-4-mini writes functools before its calls.",
        "The GLM tag <tool_call> opens a call.",
        "Call it as get_weather(city='Lyon') when you need it.",
    ],
)
def test_answers_that_only_look_like_calls_stay_answers(answer: str) -> None:
    # Given an answer holding JSON with a name, a bracketed list, a family's tag word, or a call in prose
    decision = parse_completion(answer, "function_calling", TOOLS)
    # When it is parsed / Then it is the answer
    assert decision == FinalAnswer(text=answer)


def test_spaces_inside_a_tagged_string_value_are_kept() -> None:
    # Given a call in tag markup whose string value starts with indentation (an edit tool's old text)
    text = (
        '<minimax:tool_call><invoke name="edit"><parameter name="old">    if x:</parameter>'
        '<parameter name="count"> 2 </parameter></invoke></minimax:tool_call>'
    )
    # When it is parsed / Then the string keeps its spaces, and the number is read as one
    decision = parse_completion(text, "function_calling", TOOLS)
    assert isinstance(decision, ToolCalls)
    assert decision.calls[0].arguments == {"old": "    if x:", "count": 2}


def test_a_quoted_argument_holding_its_own_quote_runs_to_the_quote_that_ends_it() -> None:
    # Given a pythonic call whose shell command holds the quote that delimits it, unescaped
    text = "[bash(command='sed -n '1,5p' notes.txt', timeout=10)]"
    # When it is parsed / Then the command is whole
    decision = parse_completion(text, "function_calling", TOOLS)
    assert isinstance(decision, ToolCalls)
    assert decision.calls[0].arguments == {"command": "sed -n '1,5p' notes.txt", "timeout": 10}


def test_values_between_tags_take_the_types_of_the_tools_parameters() -> None:
    # Given a tool with a string and an integer parameter, and a call writing both as digits between tags
    tool = ToolSpec(
        name="forecast",
        parameters={
            "type": "object",
            "properties": {"zip": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "days": {"type": "integer"}},
        },
    )
    text = (
        "<tool_call>\n<function=forecast>\n<parameter=zip>20500</parameter>\n"
        "<parameter=days>3</parameter>\n</function>\n</tool_call>"
    )
    # When parsed / Then the string stays the text written and the integer is a number
    decision = parse_completion(text, "function_calling", [tool])
    assert isinstance(decision, ToolCalls)
    assert decision.calls[0].arguments == {"zip": "20500", "days": 3}


def test_a_plain_value_written_as_the_arguments_goes_to_the_tools_one_parameter() -> None:
    # Given a call written as JSON text whose arguments are one plain value / When parsed
    decision = parse_completion('{"name": "get_weather", "arguments": "Lyon"}', "function_calling", TOOLS)
    # Then the value is the tool's one parameter
    assert isinstance(decision, ToolCalls)
    assert decision.calls[0].arguments == {"city": "Lyon"}


@pytest.mark.parametrize(
    "text",
    [
        # the recipient written before the channel
        "<|channel|>analysis<|message|>Use the tool.<|end|><|start|>assistant to=functions.get_weather"
        '<|channel|>commentary json<|message|>{"city": "Lyon"}<|call|>',
        # a preamble to the user on the commentary channel, then the call
        "<|channel|>analysis<|message|>Use the tool.<|end|><|start|>assistant<|channel|>commentary<|message|>"
        "I will look it up.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
        '<|constrain|>json<|message|>{"city": "Lyon"}<|call|>',
    ],
    ids=["recipient_before_channel", "preamble_then_call"],
)
def test_harmony_calls_are_read_wherever_their_header_names_the_recipient(text: str) -> None:
    # Given gpt-oss served raw, its call's header written either way / When parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then it is the call, the preamble (if any) its thought, the analysis never
    assert isinstance(decision, ToolCalls)
    assert [(call.name, call.arguments) for call in decision.calls] == [("get_weather", {"city": "Lyon"})]
    assert "Use the tool" not in decision.thought


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Ly',
        "I will check.<\uff5ctool\u2581calls\u2581begin\uff5c>get_weather",
        "<function_calls><tool_name>get_weather<parameters><city>Lyon</city></parameters></function_calls>",
        "<name>get_weather\n</parameter>\n<parameter=city>\nLyon\n</parameter>\n</function>",
    ],
    ids=["cut_json", "cut_special_token", "no_invoke", "garbled_function_tag"],
)
def test_a_call_whose_markup_cannot_be_read_is_reported_not_answered(text: str) -> None:
    # Given a reply that opens a call in some family's markup, cut off or broken / When parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then the model is told its call could not be read, instead of the markup ending the run as an answer
    assert isinstance(decision, ParseError) and "could not be read" in decision.message


def test_a_broken_line_between_call_objects_leaves_the_others_read() -> None:
    # Given two calls in a tag with a line of broken JSON between them / When parsed
    text = (
        '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Lyon"}}\n{oops}\n'
        '{"name": "bash", "arguments": {}}\n</tool_calls>'
    )
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then both calls are read
    assert isinstance(decision, ToolCalls) and [call.name for call in decision.calls] == ["get_weather", "bash"]


EXAMPLE_IN_PROSE = (
    'Send the widget as JSON, for instance:\n```json\n{"name": "widget", "parameters": {"size": 3}}\n```\n'
    "The server answers with its id."
)


def test_a_call_object_shown_as_an_example_in_an_answer_stays_the_answer() -> None:
    # Given an answer that shows, after its text, a JSON object shaped like a call to no tool it was offered
    # When it is parsed
    decision = parse_completion(EXAMPLE_IN_PROSE, "function_calling", TOOLS)
    # Then it is the answer, whole
    assert decision == FinalAnswer(text=EXAMPLE_IN_PROSE)


def test_a_call_object_after_a_remark_that_names_an_offered_tool_is_the_call() -> None:
    # Given a remark, then a fenced call object naming an offered tool / When it is parsed
    text = 'I will check.\n```json\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n```'
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then it is that call
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize(
    "text",
    [
        '```tool_code\nget_weather(city="Paris")\n```',
        'I will check.\n\n```tool_code\nprint(get_weather(city="Paris"))\n```<end_of_turn>',
        "```tool_code\nweather = get_weather(city='Paris')\nprint(weather)\n```",
    ],
)
def test_gemma_tool_code_fences_are_calls(text: str) -> None:
    # Given Gemma 3's call in a tool_code fence: bare, printed, or assigned then printed
    # When it is parsed as a native-tools reply
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then it is the call
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [("get_weather", {"city": "Paris"})]


def test_a_tool_code_fence_holding_other_python_stays_the_answer() -> None:
    # Given an answer whose tool_code fence holds code that is not a list of calls
    text = "Here is how:\n```tool_code\nimport math\nprint(math.sqrt(2))\n```"
    # When it is parsed / Then it is the answer as written
    assert parse_completion(text, "function_calling", TOOLS) == FinalAnswer(text=text)


@pytest.mark.parametrize("token", ["<end_of_turn>", "<|im_end|>", "<|eot_id|>", "</s>", "<|eot|>", "<|eom|>"])
def test_an_end_of_turn_token_decoded_into_the_text_is_not_part_of_the_answer(token: str) -> None:
    # Given an answer that ends with its family's end-of-turn token / When it is parsed
    decision = parse_completion(f"The move is e5g4.{token}\n", "function_calling", TOOLS)
    # Then the answer is the text before it
    assert decision == FinalAnswer(text="The move is e5g4.")


@pytest.mark.parametrize(
    ("text", "call"),
    [
        # meta-llama/llama-models models/llama3_3/prompt_format.md: a built-in tool, called as `tool.call(...)`
        ('<|python_tag|>brave_search.call(query="gold price")<|eom_id|>', ("brave_search", {"query": "gold price"})),
        # its custom tool format: the arguments as one JSON object in the function tag
        ('<function=get_weather>{"city": "Paris"}</function><|eot_id|>', ("get_weather", {"city": "Paris"})),
        # Llama 4's pythonic calls, ended by its own end-of-turn token
        ('[get_weather(city="Paris")]<|eot|>', ("get_weather", {"city": "Paris"})),
    ],
)
def test_llamas_documented_call_formats_are_the_calls(text: str, call: tuple[str, dict[str, str]]) -> None:
    # Given a call as Llama 3.1 to 4 write it, served without Llama's tool parser / When it is parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then it is that call, named as the tool and with its arguments
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [call]


CAR_TOOLS = [*TOOLS, ToolSpec(name="get_car_price", parameters={"type": "object", "properties": {}})]


@pytest.mark.parametrize(
    "text",
    [
        # MeetKai/functionary tests/prompt_test_v3.llama3.txt: a remark to the user, then a call per recipient line
        '>>>all\nI will compare>>>get_car_price\n{"car_name": "Song"}>>>get_car_price\n{"car_name": "Tang"}',
        # tests/prompt_test_v3-llama3.1.txt: the function tags right after the remark, on its line
        'I will compare<function=get_car_price>{"car_name": "Song"}</function>'
        '<function=get_car_price>{"car_name": "Tang"}</function><|eom_id|>',
    ],
)
def test_functionarys_calls_after_its_remark_are_the_calls(text: str) -> None:
    # Given Functionary's reply: a remark, then two calls / When it is parsed
    decision = parse_completion(text, "function_calling", CAR_TOOLS)
    # Then both calls are read, and the remark is the thought
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [
        ("get_car_price", {"car_name": "Song"}),
        ("get_car_price", {"car_name": "Tang"}),
    ]
    assert decision.thought == "I will compare"


def test_functionarys_text_to_all_is_the_answer_without_its_recipient_line() -> None:
    # Given Functionary v3's answer, addressed to all / When it is parsed
    decision = parse_completion(">>>all\nIt is 10 degrees in Hanoi.", "function_calling", TOOLS)
    # Then the answer is the text after the recipient line
    assert decision == FinalAnswer(text="It is 10 degrees in Hanoi.")


def test_nexusravens_call_line_is_the_calls_and_its_explanation_is_ignored() -> None:
    # Given NexusRaven-V2's reply: "Call:" and calls separated by semicolons, then its explanation
    text = "Call: get_weather(city='Paris'); get_weather(city='Oslo'); \nThought: These calls answer it."
    # When it is parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then both calls are read
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]


def test_a_call_nested_in_another_calls_argument_asks_for_one_call_at_a_time() -> None:
    # Given NexusRaven's nested call, whose argument is a call of another offered tool
    text = "Call: get_weather(city=bash(command='cat city.txt'))<bot_end>\nThought: nested."
    # When it is parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then the model is told to call the inner tool first
    assert isinstance(decision, ParseError)
    assert "call bash first" in decision.message and '"get_weather"' in decision.message


def test_command_rs_action_block_of_tool_name_objects_is_the_call() -> None:
    # Given Command R's plan and its "Action:" block of {"tool_name", "parameters"} objects
    text = (
        'Plan: I will check.\nAction: ```json\n[\n    {"tool_name": "get_weather", "parameters": {"city": "Paris"}}\n]'
        "\n```"
    )
    # When it is parsed
    decision = parse_completion(text, "function_calling", TOOLS)
    # Then it is the call
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [("get_weather", {"city": "Paris"})]


def test_a_function_tag_shown_in_prose_naming_no_offered_tool_stays_the_answer() -> None:
    # Given an answer that shows Llama's custom tool format as an example, for a tool the turn does not offer
    text = 'Llama 3.1 writes such a call as <function=trending_songs>{"n": 5}</function> on one line.'
    # When it is parsed / Then it is the answer, not a call
    assert parse_completion(text, "function_calling", TOOLS) == FinalAnswer(text=text)


def test_code_that_calls_a_tool_in_a_string_parameter_is_no_nested_call() -> None:
    # Given a call whose string parameter holds code that calls another offered tool
    text = "Call: bash(command='get_weather(city=1)')"
    # When it is parsed / Then it is the call, its code kept as written
    decision = parse_completion(text, "function_calling", TOOLS)
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [("bash", {"command": "get_weather(city=1)"})]
