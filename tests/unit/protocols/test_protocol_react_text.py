"""Parsing the react_text protocol: Thought / Action / Action Input / Final Answer lines."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stepwise.models.decision import Decision, FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols import get_protocol
from stepwise.protocols.base import ProtocolName


def parse(text: str, tools: list[ToolSpec] | None = None) -> Decision:
    return get_protocol("react_text").parse(Completion(content=text), tools)


def only_call(decision: Decision) -> ToolCalls:
    assert isinstance(decision, ToolCalls), decision
    assert len(decision.calls) == 1
    return decision


def test_tool_call_with_thought(read_sample: Callable[[str], str]) -> None:
    # Given Thought, Action and Action Input lines / When parsed
    decision = only_call(parse(read_sample("react_text/tool_call.txt")))
    # Then the call, its id and the thought are read
    assert decision.calls[0].model_dump() == {
        "id": "call_0",
        "name": "get_weather",
        "arguments": {"city": "Paris", "unit": "celsius"},
    }
    assert decision.thought == "The user wants the weather in Paris. I should use the weather tool."
    assert decision.note == ""


def test_final_answer_with_thought(read_sample: Callable[[str], str]) -> None:
    # Given a Final Answer line / When parsed / Then it is the answer, with the thought
    decision = parse(read_sample("react_text/final_answer.txt"))
    assert decision == FinalAnswer(text="It is sunny and 21°C in Paris today.", thought="I now know the final answer.")


def test_keyword_case_variants_and_full_width_colons(read_sample: Callable[[str], str]) -> None:
    # Given lower/upper-case keywords with full-width colons / When parsed
    decision = only_call(parse(read_sample("react_text/case_and_fullwidth.txt")))
    # Then the labels are recognised
    assert decision.calls[0].arguments == {"city": "Rome"}
    assert decision.thought == "the user needs the weather in Rome"


def test_markdown_bold_labels_and_backticked_tool_name(read_sample: Callable[[str], str]) -> None:
    # Given **Action:** labels and a `search` name in backticks / When parsed
    decision = only_call(parse(read_sample("react_text/markdown_bold.txt")))
    # Then the decoration is dropped
    assert decision.calls[0].name == "search"
    assert decision.calls[0].arguments == {"query": "tallest building in Europe"}
    assert decision.thought == "I need to look this up."


def test_chinese_keywords(read_sample: Callable[[str], str]) -> None:
    # Given 思考 / 动作 / 动作输入 labels with full-width colons / When parsed
    decision = only_call(parse(read_sample("react_text/chinese_keywords.txt")))
    # Then the call and thought are read
    assert decision.calls[0].name == "get_weather"
    assert decision.calls[0].arguments == {"city": "上海"}
    assert decision.thought == "用户想知道上海的天气，我需要调用天气工具。"  # noqa: RUF001


def test_chinese_variant_keywords(read_sample: Callable[[str], str]) -> None:
    # Given the 想法 / 行动 / 行动输入 spellings / When parsed
    decision = only_call(parse(read_sample("react_text/chinese_variant_keywords.txt")))
    # Then they are read like the others
    assert decision.calls[0].arguments == {"amount": 100, "from": "CNY", "to": "EUR"}
    assert decision.thought == "我需要先查汇率。"


def test_chinese_final_answer(read_sample: Callable[[str], str]) -> None:
    # Given a 最终答案 label / When parsed / Then it is the final answer
    decision = parse(read_sample("react_text/chinese_final_answer.txt"))
    assert decision == FinalAnswer(text="上海今天多云，气温 18°C。", thought="我已经得到了所有信息。")  # noqa: RUF001


def test_hallucinated_observation_and_what_follows_are_ignored(read_sample: Callable[[str], str]) -> None:
    # Given an action followed by an invented observation and final answer / When parsed
    decision = only_call(parse(read_sample("react_text/hallucinated_observation.txt")))
    # Then only the action counts, and the note says the observation was ignored
    assert decision.calls[0].arguments == {"city": "Paris"}
    assert "observation" in decision.note


def test_several_actions_take_the_first_and_say_so(read_sample: Callable[[str], str]) -> None:
    # Given two Action/Action Input pairs / When parsed
    decision = only_call(parse(read_sample("react_text/several_actions.txt")))
    # Then the first is taken and the note says the rest were ignored
    assert decision.calls[0].arguments == {"city": "Paris"}
    assert "2 actions" in decision.note


def test_fenced_input_with_language_tag(read_sample: Callable[[str], str]) -> None:
    # Given an Action Input in a ```json fence over several lines / When parsed
    decision = only_call(parse(read_sample("react_text/fenced_input.txt")))
    # Then the JSON inside the fence is the arguments
    assert decision.calls[0].arguments == {
        "query": "SELECT name FROM users WHERE created_at > '2024-01-01'",
        "limit": 10,
    }


def test_fenced_input_without_language_tag(read_sample: Callable[[str], str]) -> None:
    # Given an Action Input in a bare ``` fence / When parsed / Then the JSON is the arguments
    decision = only_call(parse(read_sample("react_text/fenced_input_no_language.txt")))
    assert decision.calls[0].arguments == {"query": "SELECT count(*) FROM orders", "limit": 1}


def test_plain_text_input_goes_to_the_only_required_parameter(
    read_sample: Callable[[str], str], tools: list[ToolSpec]
) -> None:
    # Given a plain-text Action Input and the search tool (one required parameter) / When parsed
    decision = only_call(parse(read_sample("react_text/plain_text_input.txt"), tools))
    # Then the text is that parameter
    assert decision.calls[0].arguments == {"query": "population of Lyon 2023"}


def test_plain_text_input_without_tools_goes_to_input(read_sample: Callable[[str], str]) -> None:
    # Given a plain-text Action Input and no tools / When parsed / Then it is under "input"
    decision = only_call(parse(read_sample("react_text/plain_text_input.txt")))
    assert decision.calls[0].arguments == {"input": "population of Lyon 2023"}


def test_quoted_string_input_is_unquoted(tools: list[ToolSpec]) -> None:
    # Given an Action Input that is one quoted string / When parsed / Then the quotes are not kept
    decision = only_call(parse('Action: search\nAction Input: "Louvre opening hours"', tools))
    assert decision.calls[0].arguments == {"query": "Louvre opening hours"}


def test_python_style_input(read_sample: Callable[[str], str]) -> None:
    # Given unquoted keys, single quotes, True/None and trailing commas / When parsed
    decision = only_call(parse(read_sample("react_text/python_style_input.txt")))
    # Then the arguments keep JSON types
    assert decision.calls[0].arguments == {
        "title": "Printer on floor 3 is jammed",
        "urgent": True,
        "assignee": None,
        "tags": ["printer"],
    }


def test_final_answer_containing_code_fences_and_json(read_sample: Callable[[str], str]) -> None:
    # Given a final answer with a JSON fence and a python fence / When parsed
    decision = parse(read_sample("react_text/final_answer_with_code.txt"))
    # Then the answer runs to the end, fences and all
    assert isinstance(decision, FinalAnswer)
    assert decision.text.startswith("Here is the configuration you asked for:")
    assert '```json\n{"retries": 3, "backoff": {"base": 0.5, "max": 8}}\n```' in decision.text
    assert decision.text.endswith('config = json.load(open("config.json"))\n```')


def test_nested_braces_and_unicode_in_input(read_sample: Callable[[str], str]) -> None:
    # Given nested objects and non-ASCII text / When parsed / Then read exactly
    decision = only_call(parse(read_sample("react_text/nested_unicode_input.txt")))
    assert decision.calls[0].arguments == {
        "filter": {"city": "北京", "range": {"from": "2024-01-01", "to": "2024-01-31"}},
        "note": "naïve café ☕",
    }


def test_prose_before_and_after(read_sample: Callable[[str], str]) -> None:
    # Given prose before the Thought and after the Action Input / When parsed
    decision = only_call(parse(read_sample("react_text/prose_before_and_after.txt")))
    # Then the JSON input is read despite the trailing prose
    assert decision.calls[0].arguments == {"query": "Louvre opening hours"}
    assert decision.thought.endswith("I should search for the opening hours.")


def test_action_written_as_a_function_call(tools: list[ToolSpec]) -> None:
    # Given "Action: get_weather(city='Oslo', days=2)" and no Action Input / When parsed
    decision = only_call(parse("Thought: check\nAction: get_weather(city='Oslo', days=2)", tools))
    # Then the call's arguments are read from the parentheses
    assert decision.calls[0].arguments == {"city": "Oslo", "days": 2}


def test_action_in_react_paper_bracket_style() -> None:
    # Given the ReAct paper's "Search[...]" form / When parsed / Then the bracket text is the input
    decision = only_call(parse("Thought: look it up\nAction: Search[Colorado orogeny]"))
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("Search", {"input": "Colorado orogeny"})


def test_words_after_a_bracket_actions_closing_bracket_are_no_part_of_its_input() -> None:
    # Given a bracket action with words after its closing bracket (FireAct's gpt-3.5 fine-tune wrote this)
    decision = only_call(parse("Thought: try again\nAction: search[NBA awards 1953] Kevin Durant"))
    # When parsed / Then the bracket holds the input, not an error asking for an 'Action Input:' line
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("search", {"input": "NBA awards 1953"})


def test_a_bracket_action_never_closed_is_reported_as_such() -> None:
    # Given a bracket action whose bracket the model never closed (FireAct's Llama-2 7B wrote this)
    decision = parse("Thought: look it up\nAction: search[what is Bob Marley known for?")
    # When parsed / Then the error names the unclosed bracket, not a missing 'Action Input:' line
    assert isinstance(decision, ParseError)
    assert "never closes" in decision.message


def test_the_react_papers_finish_bracket_is_the_final_answer() -> None:
    # Given the paper's own ending, "Finish[answer]" / When parsed / Then the bracket text is the answer
    decision = parse("Thought 2: The band is from Tennessee.\nAction 2: Finish[REFUTES]")
    assert decision == FinalAnswer(text="REFUTES", thought="The band is from Tennessee.")


def test_finish_is_a_call_where_a_tool_of_that_name_is_offered() -> None:
    # Given a tool named Finish among the offered tools / When "Finish[...]" is parsed / Then it is that tool's call
    finish = ToolSpec(name="Finish", parameters={"type": "object", "properties": {"input": {"type": "string"}}})
    decision = only_call(parse("Thought: done\nAction: Finish[report]", [finish]))
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("Finish", {"input": "report"})


def test_final_answer_written_as_an_action() -> None:
    # Given "Action: Final Answer" with the answer as its input / When parsed / Then it is a final answer
    decision = parse("Thought: done\nAction: Final Answer\nAction Input: Paris")
    assert decision == FinalAnswer(text="Paris", thought="done")


def test_action_none_before_a_final_answer_is_skipped() -> None:
    # Given "Action: None" followed by a Final Answer / When parsed / Then it is the final answer
    decision = parse("Thought: I already know this.\nAction: None\nFinal Answer: Paris")
    assert decision == FinalAnswer(text="Paris", thought="I already know this.")


def test_action_line_that_is_not_a_tool_name_is_a_parse_error() -> None:
    # Given a sentence where the tool name belongs / When parsed / Then the error says so
    decision = parse("Action: I will use the search tool\nAction Input: x")
    assert isinstance(decision, ParseError)
    assert "not a tool name" in decision.message


def test_text_without_keywords_is_a_parse_error(read_sample: Callable[[str], str]) -> None:
    # Given prose only / When parsed / Then the error names the missing lines
    decision = parse(read_sample("react_text/no_keywords.txt"))
    assert decision == ParseError(message="Your reply has neither an 'Action:' line nor a 'Final Answer:' line.")


def test_empty_final_answer_is_a_parse_error() -> None:
    # Given a Final Answer label with nothing after it / When parsed / Then it is a parse error
    assert parse("Thought: done\nFinal Answer:   ") == ParseError(message="Your final answer is empty.")


@pytest.mark.parametrize("text", ["", " \n "])
def test_empty_or_whitespace_output_is_a_parse_error(text: str) -> None:
    # Given an empty reply / When parsed / Then it is a parse error
    assert parse(text) == ParseError(message="Your reply was empty.")


@pytest.mark.parametrize(
    "reply",
    [
        "I should look this up.\nTool: search\nTool Input: tallest building",
        "I should look this up. Tool: search Tool Input: tallest building",
    ],
)
def test_haystack_tool_and_tool_input_labels_are_an_action(reply: str, tools: list[ToolSpec]) -> None:
    # Given a reply in Haystack's agent labels, on their own lines or on the thought's
    decision = parse(reply, tools)
    # When parsed / Then it is the call, the text before the labels its thought
    assert isinstance(decision, ToolCalls)
    assert [(call.name, call.arguments) for call in decision.calls] == [("search", {"query": "tallest building"})]
    assert decision.thought == "I should look this up."


def test_a_tool_line_without_its_tool_input_is_no_action(tools: list[ToolSpec]) -> None:
    # Given an answer that lists tools on "Tool:" lines after its Final Answer label
    reply = "Final Answer: Bring these.\nTool: hammer\nTool: saw"
    # When parsed / Then the lines are part of the answer
    decision = parse(reply, tools)
    assert decision == FinalAnswer(text="Bring these.\nTool: hammer\nTool: saw")


def test_a_conversational_agents_ai_line_is_the_final_answer() -> None:
    # Given LangChain's conversational format: no tool needed, then the answer on an "AI:" line
    decision = parse("Thought: Do I need to use a tool? No\nAI: Hello, Bob.")
    # When parsed / Then the AI line is the answer
    assert decision == FinalAnswer(text="Hello, Bob.", thought="Do I need to use a tool? No")


def test_an_observation_label_cut_by_the_token_limit_is_not_part_of_the_input(tools: list[ToolSpec]) -> None:
    # Given an action whose reply was cut as the model began its own "Observation" line
    decision = parse("Action: search\nAction Input: tallest building\nObse", tools)
    # When parsed / Then the input ends before the cut label
    assert isinstance(decision, ToolCalls)
    assert decision.calls[0].arguments == {"query": "tallest building"}


def test_several_bracket_actions_on_one_line_take_the_first() -> None:
    # Given the paper's bracket actions, several on one action line (reflexion's HotpotQA runs)
    search = ToolSpec(name="search", parameters={"type": "object", "properties": {"query": {"type": "string"}}})
    text = "Thought 2: I need both.\nAction 2: Search[Benito Mussolini], Search[Gyula Gömbös]"
    decision = only_call(parse(text, [search]))
    # When parsed / Then the first is the call and the model is told the rest were ignored
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("search", {"query": "Benito Mussolini"})
    assert "2 actions" in decision.note


def test_a_bracket_action_line_that_also_finishes_has_both_decisions() -> None:
    # Given a search and the paper's Finish on one action line / When parsed / Then it is a parse error
    decision = parse("Thought: done\nAction: Search[Paris] and Finish[Paris]")
    assert isinstance(decision, ParseError)


def test_an_action_spelling_an_offered_tools_name_with_punctuation_calls_that_tool() -> None:
    # Given a tool offered as gmail_find_email and a model that writes Zapier's name for it, "Gmail: Find Email"
    gmail = ToolSpec(name="gmail_find_email", parameters={"type": "object", "properties": {}})
    # When the action is parsed
    decision = only_call(parse("Thought: find it\nAction: Gmail: Find Email\nAction Input: the last email", [gmail]))
    # Then it calls the offered tool
    assert decision.calls[0].name == "gmail_find_email"


@pytest.mark.parametrize(
    ("protocol", "reply"),
    [
        # datawhalechina/hello-agents' ReAct prompt asks for finish(answer="..."); gpt-4.1-mini wrote it so
        ("react_text", 'Thought: I have it.\nAction: finish(answer="It is sunny in Beijing.")'),
        ("react_text", 'Thought: I have it.\nAction: Finish("It is sunny in Beijing.")'),
        ("xml", '<thought>I have it.</thought><action>finish(answer="It is sunny in Beijing.")</action>'),
        ("markers", '/*ACTION*/ finish(answer="It is sunny in Beijing.") /*END_ACTION*/'),
    ],
)
def test_the_final_answer_action_written_as_a_call_is_the_answer(protocol: ProtocolName, reply: str) -> None:
    # Given the final-answer action written as a function call, its answer as its argument
    # When parsed / Then it is the final answer, not a call of a tool named finish
    decision = get_protocol(protocol).parse(Completion(content=reply), None)
    assert isinstance(decision, FinalAnswer), decision
    assert decision.text == "It is sunny in Beijing."
