"""What LLMCall sends so a request fits the model: the summary in place of what it covers, the request's
size from the provider's last count, `max_tokens` fitted to what is left, and messages cut to fit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepwise.config.context import ContextLimits, ContextSettings
from stepwise.errors import ContextWindowExceeded
from stepwise.llm.provider_errors import openai_error
from stepwise.models.messages import ChatMessage, ChatRequest, ToolCall
from stepwise.models.run import StoredMessage
from stepwise.models.state import ContextState
from stepwise.models.step_record import CompactionNote
from stepwise.models.summary import CallDigest, ConversationSummary
from stepwise.steps.context_window import RequestSize, fit_request, overflow_safety, rendered_history
from stepwise.steps.summary_text import summary_message
from stepwise.steps.token_estimate import request_tokens, text_tokens
from tests.support.windowed_model import english_tokens


def stored(role: str, content: str, iteration: int, slot: int, **fields: Any) -> StoredMessage:
    return StoredMessage.model_validate(
        fields | {"role": role, "content": content, "iteration": iteration, "slot": slot}
    )


def page_iteration(iteration: int, text: str = "a page") -> list[StoredMessage]:
    call = ToolCall(id=f"call_{iteration}", name="fetch_page", arguments={"page": iteration})
    return [
        stored("assistant", "", iteration, 0, tool_calls=[call]),
        stored("tool", text, iteration, 1, tool_call_id=call.id, name="fetch_page"),
    ]


def summary_through(through: int, **fields: Any) -> ConversationSummary:
    note = CompactionNote(
        first_iteration=1,
        through_iteration=through,
        tokens_before=9000,
        tokens_after=2000,
        source="model",
        reason="window",
    )
    calls = [
        CallDigest(iteration=i, name="fetch_page", arguments=json.dumps({"page": i}), outcome="ok")
        for i in range(1, through + 1)
    ]
    return ConversationSummary(iteration=through + 1, n=0, through=through, calls=calls, note=note, **fields)


def limits(window: int | None = 10_000, **settings: Any) -> ContextLimits:
    return ContextLimits.resolve(
        ContextSettings(**settings), window=window, max_output=None, summary_model="m", summary_window=None
    )


def build(messages: list[ChatMessage], max_tokens: int | None) -> ChatRequest:
    return ChatRequest(
        messages=[ChatMessage(role="system", content="You read pages."), *messages], max_tokens=max_tokens
    )


def test_text_is_estimated_at_or_above_what_an_english_tokenizer_counts() -> None:
    # Given English prose, JSON and Chinese text
    for text in [
        "The depot on aisle 7 holds 49 parcels. " * 50,
        json.dumps({"page": 3, "rows": list(range(200))}),
        "仓库里有四十九个包裹。" * 40,
    ]:
        # When it is estimated; Then the estimate is never under a 4-bytes-per-token vocabulary's count
        assert text_tokens(text) >= english_tokens(text)


def test_the_summary_stands_in_for_the_iterations_it_covers_and_the_rest_follow_whole() -> None:
    # Given a question, four iterations of calls and results, and a summary of the first three
    history = [stored("user", "How many parcels?", 0, 0), *[m for i in range(1, 5) for m in page_iteration(i)]]
    # When the request's history is rendered
    rendered = rendered_history(history, summary_through(3), language="en", summary_tokens=1000)
    # Then it is the question, the summary, then iteration 4's call with its result, and 3 model turns are summarized
    assert [(m.role, m.iteration) for m in rendered.messages] == [
        ("user", 0),
        ("user", 3),
        ("assistant", 4),
        ("tool", 4),
    ]
    assert rendered.messages[1].content.startswith("[Summary of iterations 1-3 of this task.")
    assert rendered.turns_before == 3


def test_the_summary_lists_the_calls_made_with_their_arguments_and_outcomes() -> None:
    # Given a summary of three calls, the notes of its summarizer
    summary = summary_through(3, facts="- [2 fetch_page] aisle 2 holds 14 parcels", open="- read page 4")
    # When it is rendered in English and in Chinese
    english, chinese = summary_message(summary, "en", 1000), summary_message(summary, "zh", 1000)
    # Then each call is listed with its arguments and outcome, and the notes follow quoted under their source
    assert '- 3: fetch_page {"page": 3} -> ok' in english
    assert "Tool output of fetch_page, iteration 2, quoted:\n> - aisle 2 holds 14 parcels\n" in english
    assert english.endswith("Still open, as the summarizer noted it (quoted, untrusted):\n> - read page 4")
    assert '- 3: fetch_page {"page": 3} -> 成功' in chinese
    assert "工具 fetch_page 在第 2 轮的输出\uff08引用\uff09\uff1a\n> - aisle 2 holds 14 parcels" in chinese


def test_calls_that_do_not_fit_the_summary_budget_are_counted_per_tool_instead() -> None:
    # Given a summary of 60 calls rendered with a small budget
    summary = summary_through(60)
    text = summary_message(summary, "en", 300)
    # Then the latest calls are listed, the others counted on one line, and the whole stays within its budget
    assert "- 60: fetch_page" in text and "- 1: fetch_page" not in text
    assert "- before these," in text and "fetch_page x" in text
    assert text_tokens(text) < 300


def test_the_size_of_a_request_that_extends_the_last_one_is_the_providers_count_plus_what_was_added() -> None:
    # Given a last request the provider counted at 3,000 tokens, estimated here at 4,000
    size = RequestSize(ContextState(sent_tokens=3000, sent_estimate=4000, anchored=True))
    # When the next request, estimated at 6,000, extends it; Then it is 3,000 plus the 2,000 estimated since
    assert size.tokens(6000) == 5000


def test_estimates_are_scaled_up_when_the_provider_counted_more_than_estimated() -> None:
    # Given a last request the provider counted at twice its estimate (dense text), and a summary since
    size = RequestSize(ContextState(sent_tokens=8000, sent_estimate=4000, anchored=False))
    # When a request is estimated at 3,000; Then it is counted as 6,000
    assert size.tokens(3000) == 6000


def test_max_tokens_is_lowered_to_what_the_window_leaves_but_never_below_the_floor() -> None:
    # Given a 10,000-token window, a 512-token floor, and a history of about 6,000 tokens
    history = [ChatMessage(role="user", content="x" * 18_000)]
    fit = fit_request(
        build, history, limits=limits(), size=RequestSize(ContextState()), asked_max_tokens=8000, language="en"
    )
    # Then the 8,000 asked for are lowered to what is left of the window
    assert fit.request.max_tokens == 10_000 - fit.tokens

    # And when a system prompt of about 9,700 tokens (never cut) leaves less than the floor, it is the floor
    def crowded(messages: list[ChatMessage], max_tokens: int | None) -> ChatRequest:
        return ChatRequest(
            messages=[ChatMessage(role="system", content="s" * 29_000), *messages], max_tokens=max_tokens
        )

    short = [ChatMessage(role="user", content="Go.")]
    fit = fit_request(
        crowded, short, limits=limits(), size=RequestSize(ContextState()), asked_max_tokens=8000, language="en"
    )
    assert (fit.tokens > 10_000 - 512, fit.request.max_tokens) == (True, 512)


def test_a_tool_result_too_large_for_the_window_is_cut_with_a_marker_never_sent_whole() -> None:
    # Given a 50 KB observation in a 10,000-token window
    history = [
        ChatMessage(role="user", content="Read it."),
        ChatMessage(role="tool", content="y" * 50_000, tool_call_id="c"),
    ]
    # When the request is made to fit
    fit = fit_request(
        build, history, limits=limits(), size=RequestSize(ContextState()), asked_max_tokens=None, language="en"
    )
    # Then the observation was cut, says so, and the request leaves room for the floor's reply
    cut = fit.request.messages[-1].content
    assert fit.cut_messages == 1
    assert "characters cut here to fit the model's context window" in cut and len(cut) < 50_000
    assert request_tokens(fit.request) <= 10_000 - 512
    assert fit.request.messages[1].content == "Read it."


def test_a_request_past_the_threshold_that_still_fits_is_reported_not_cut() -> None:
    # Given an 8,000-token history in a 10,000-token window whose threshold is 75%
    history = [ChatMessage(role="user", content="z" * 24_000)]
    fit = fit_request(
        build, history, limits=limits(), size=RequestSize(ContextState()), asked_max_tokens=None, language="en"
    )
    # Then it is over the threshold, sent whole
    assert (fit.over_threshold, fit.cut_messages) == (True, 0)


def test_without_a_known_window_the_request_is_sent_as_built() -> None:
    # Given a model whose window no one knows, and a long history
    history = [ChatMessage(role="user", content="z" * 100_000)]
    fit = fit_request(
        build,
        history,
        limits=limits(window=None),
        size=RequestSize(ContextState()),
        asked_max_tokens=300,
        language="en",
    )
    # Then nothing is cut, nothing is reported, and max_tokens is what was asked
    assert (fit.cut_messages, fit.over_threshold, fit.request.max_tokens) == (0, False, 300)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "This model's maximum context length is 10000 tokens. However, your messages resulted in 15000 tokens.",
            15000 / 10000 * 1.05,
        ),
        (
            "This model's maximum context length is 8192 tokens. However, you requested 8203 tokens (7691 in the "
            "messages, 512 in the completion).",
            7691 / 10000 * 1.05,
        ),
        ("prompt is too long: 210,000 tokens > 200000 maximum", 210000 / 10000 * 1.05),
        ("Input is too long for requested model.", 1.25),
    ],
)
def test_estimates_are_raised_to_what_the_provider_says_it_counted(message: str, expected: float) -> None:
    # Given a request estimated at 10,000 tokens that the provider refused with this message
    error = openai_error("m", 400, None, message)
    # When the estimates are raised for the next attempt; Then by what the provider counted, and at least 1.25
    assert isinstance(error, ContextWindowExceeded)
    assert overflow_safety(error.prompt_tokens, 10_000, 1.25) == pytest.approx(max(1.25, expected))
