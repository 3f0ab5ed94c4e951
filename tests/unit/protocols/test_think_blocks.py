"""Reasoning written into a reply's text is split off the way reasoning parsers split it, and nothing else is.

The outputs are those of vLLM's reasoning-parser tests (vllm-project/vllm tests/reasoning/), which record how
each model family writes its thinking.
"""

from __future__ import annotations

import pytest

from stepwise.models.messages import Completion, ReasoningBlock, ToolCall
from stepwise.protocols.think_blocks import split_reasoning, without_reasoning


@pytest.mark.parametrize(
    ("text", "reasoning", "reply"),
    [
        # test_deepseekr1_reasoning_parser.py REASONING_WITH_THINK, MULTIPLE_LINES_WITH_THINK, NEW_LINE
        (
            "<think>This is a reasoning section</think>This is the rest",
            "This is a reasoning section",
            "This is the rest",
        ),
        ("<think>This\nThat</think>This is the rest\nThat", "This\nThat", "This is the rest\nThat"),
        (
            "\n<think>This is a reasoning section</think>\nThis is the rest",
            "This is a reasoning section",
            "This is the rest",
        ),
        # test_qwen3_reasoning_parser.py WITHOUT_START_TOKEN: the chat template wrote <think> into the prompt
        ("This is a reasoning section</think>This is the rest", "This is a reasoning section", "This is the rest"),
        # test_deepseekr1_reasoning_parser.py SHORTEST_REASONING
        ("</think>This is the rest", "", "This is the rest"),
        # test_mistral_reasoning_parser.py, test_seedoss_reasoning_parser.py, test_cohere_command_reasoning_parser.py
        (
            "[THINK]This is a reasoning section[/THINK]This is the rest",
            "This is a reasoning section",
            "This is the rest",
        ),
        (
            "<seed:think>This is a reasoning section</seed:think>This is the rest",
            "This is a reasoning section",
            "This is the rest",
        ),
        ("<|START_THINKING|>Plan it.<|END_THINKING|>Done.", "Plan it.", "Done."),
        # vLLM docs/features/reasoning_outputs.md: Kimi K2 Thinking's delimiters
        ("◁think▷Look at it.◁/think▷It is a cat.", "Look at it.", "It is a cat."),
        # test_granite_reasoning_parser.py
        ("Here is my thought process:\nI think.\nHere is my response:\nThe rest", "I think.", "The rest"),
        # test_hunyuan_a13b_reasoning_parser.py: the reply wrapped in <answer>
        ("<think>\nReason.\n</think>\n<answer>\nThe answer.\n</answer>", "Reason.", "The answer."),
        # test_gptoss_reasoning_parser.py: the harmony channels
        (
            "<|channel|>analysis<|message|>We think.<|end|><|start|>assistant<|channel|>final<|message|>Hello.",
            "We think.",
            "Hello.",
        ),
        # the same decoded with its special tokens skipped (Augustas11/macprovider issue #743, gpt-oss-20b on MLX)
        ("analysisThe answer is four.assistantfinalfour", "The answer is four.", "four"),
    ],
)
def test_the_reasoning_of_each_model_family_is_split_off_its_reply(text: str, reasoning: str, reply: str) -> None:
    # Given a reply as a reasoning model writes it / When it is split
    split = split_reasoning(text)
    # Then the reasoning and the reply are apart
    assert (split.reasoning, split.reply.strip()) == (reasoning, reply)


def test_a_reply_cut_off_while_thinking_is_all_reasoning() -> None:
    # Given a reply that opened its thinking and never closed it (test_qwen3_reasoning_parser.py ONLY_OPEN_TAG)
    split = split_reasoning("<think>This is a reasoning section")
    # Then all of it is reasoning, there is no reply, and the split says it was cut off
    assert split == ("This is a reasoning section", "", True)


def test_a_call_opened_inside_unclosed_thinking_ends_the_thinking() -> None:
    # Given thinking never closed before the call (Qwen3.5 under llama.cpp and vLLM: ggml-org/llama.cpp #21118)
    call = "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>"
    split = split_reasoning("<think>\nI need the weather.\n\n" + call)
    # Then the thinking ends where the call opens, and the call is the reply
    assert split == ("I need the weather.", call, False)


def test_several_leading_blocks_and_a_later_line_block_are_all_reasoning() -> None:
    # Given two blocks before the reply and one more on its own line after an action
    split = split_reasoning("<think>a</think>\n<think>b</think>\nAction: x\n<think>c</think>\nAction Input: 1")
    # Then each block is reasoning and the reply keeps its lines
    assert split.reasoning == "a\n\nb\n\nc"
    assert split.reply.split() == ["Action:", "x", "Action", "Input:", "1"]


@pytest.mark.parametrize(
    "text",
    [
        "Use `</think>` to end the reasoning.",
        "Final Answer: the tag <think> opens a block, and </think> ends it.",
        "A plain answer.",
    ],
)
def test_tags_quoted_in_prose_are_left_in_the_reply(text: str) -> None:
    # Given a reply that only talks about the tags / When it is split
    split = split_reasoning(text)
    # Then nothing is taken out
    assert split == ("", text, False)


def test_a_completion_keeps_its_reply_and_gets_the_text_reasoning_after_the_providers_own() -> None:
    # Given a completion with a provider's reasoning field and a think block in its text, and a tool call
    completion = Completion(
        content="<think>Use the tool.</think>\nChecking.",
        tool_calls=[ToolCall(id="c1", name="search", arguments={})],
        reasoning=[ReasoningBlock(text="From the field.")],
    )
    # When the reasoning is moved out of the text
    reply = without_reasoning(completion)
    # Then the text is the reply alone and both reasonings are kept, in order
    assert reply.content == "Checking."
    assert [block.text for block in reply.reasoning] == ["From the field.", "Use the tool."]
    assert reply.tool_calls == completion.tool_calls


def test_cohere_commands_response_wrapper_and_citation_tags_are_not_the_reply() -> None:
    # Given Command A served raw: thinking, then its answer in a response wrapper with inline citations
    text = (
        "<|START_THINKING|>Look it up.<|END_THINKING|>\n<|START_RESPONSE|>It is <co>sunny</co: 0:[1]>.<|END_RESPONSE|>"
    )
    # When split / Then the reply is the answer's text, the cited words kept
    assert split_reasoning(text) == ("Look it up.", "It is sunny.", False)
