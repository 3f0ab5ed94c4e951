"""Writing a summary's notes: what is read from the summarizer, what is sent to it, and the digest that
stands in when its notes are unusable."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.config.context import ContextLimits, ContextSettings
from stepwise.config.llm import ScriptScenario
from stepwise.llm.scripted import ScriptedChatModel
from stepwise.models.messages import ToolCall
from stepwise.models.run import StoredMessage
from stepwise.steps.context_wording import EN
from stepwise.steps.summarizer import SummaryInput, call_digests, chunks_of, merged_calls, read_notes, write_notes
from stepwise.steps.token_estimate import text_tokens

# Chinese punctuation (full-width colons) is what Chinese models write.
# ruff: noqa: RUF001


def page_messages(pages: int, size: int = 6000) -> list[StoredMessage]:
    messages: list[StoredMessage] = []
    for page in range(1, pages + 1):
        call = ToolCall(id=f"c{page}", name="fetch_page", arguments={"page": page})
        text = f"Page {page}: aisle {page} holds {page * 7} parcels. " + "filler " * (size // 7)
        messages += [
            StoredMessage(role="assistant", content="", tool_calls=[call], iteration=page, slot=0),
            StoredMessage(role="tool", content=text, tool_call_id=call.id, name="fetch_page", iteration=page, slot=1),
        ]
    return messages


def source(pages: int, **fields: Any) -> SummaryInput:
    return SummaryInput(
        question="How many parcels?", previous=None, messages=page_messages(pages), first=1, through=pages, **fields
    )


def limits(window: int = 10_000) -> ContextLimits:
    return ContextLimits.resolve(
        ContextSettings(), window=window, max_output=None, summary_model="m", summary_window=None
    )


def summarizer(first: str, later: str | None = None, *, match: str | None = None) -> ScriptedChatModel:
    """A model answering the summarizer's first call with `first`, and those given notes so far with `later`."""
    scenarios = [ScriptScenario(match=match, turns=[{"content": first}])]
    if later is not None:
        scenarios.insert(0, ScriptScenario(match="notes so far", turns=[{"content": later}]))
    return ScriptedChatModel(scenarios)


OUTCOMES = {(page, f"c{page}"): True for page in range(1, 13)}


@pytest.mark.parametrize(
    "reply",
    [
        "Facts:\n- 14 parcels\nOpen:\n- page 3",
        "**Facts:**\n- 14 parcels\n\n**Open:**\n- page 3",
        "## Facts\n:\n- 14 parcels\n## Open:\n- page 3".replace("\n:", ":"),
        "事实：\n- 14 parcels\n待办：\n- page 3",
    ],
)
def test_the_notes_are_read_from_the_headings_models_write(reply: str) -> None:
    # Given a summarizer's reply with its two sections, as models format them; When read
    # Then the facts and what is open are found
    assert read_notes(reply, 500) == ("- 14 parcels", "- page 3")


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("", "the reply was empty"),
        ("\x00\x07 ~~ @@@ ###", "the reply has no facts section"),
        ("Facts:\n\nOpen:\n- everything", "the facts section is empty"),
        ("Facts:\n" + "- a long note\n" * 500, "the notes are longer than their budget of 500 tokens"),
    ],
)
def test_unusable_notes_are_refused_with_the_reason(reply: str, problem: str) -> None:
    # Given a reply that is empty, garbage, without facts, or over its budget; When read; Then it is refused
    assert read_notes(reply, 500) == problem


def test_the_summarizers_input_is_sent_in_chunks_that_fit_and_a_huge_message_is_cut() -> None:
    # Given twelve 6 KB pages and one of 100 KB
    messages = page_messages(12)
    messages[-1] = messages[-1].model_copy(update={"content": "w" * 100_000})
    # When they are chunked for a 2,000-token chunk budget
    chunks = chunks_of(messages, 2000, EN)
    # Then every chunk is within the budget, the huge page was cut with a marker, and nothing is left out
    assert all(sum(text_tokens(line) + 1 for line in chunk) <= 2000 for chunk in chunks)
    assert any("characters cut here" in line for chunk in chunks for line in chunk)
    assert sum(len(chunk) for chunk in chunks) == len(messages)


def test_a_long_history_is_summarized_in_chunks_each_with_the_notes_so_far() -> None:
    # Given twelve 6 KB pages for a 10,000-token window, and a summarizer that writes notes
    model = summarizer(
        "Facts:\n- aisle 1 holds 7 parcels\nOpen:\n- the rest", "Facts:\n- aisles 1-12 read\nOpen:\n- none"
    )
    # When the notes are written
    notes = write_notes(
        source(12), complete=model.complete, model_name="m", limits=limits(), language="en", outcomes=OUTCOMES
    )
    # Then the summarizer was called once per chunk, and the last chunk's notes are the summary's
    assert notes.source == "model" and notes.chunks == notes.model_calls > 1
    assert (notes.facts, notes.open) == ("- aisles 1-12 read", "- none")


def test_unusable_notes_give_way_to_a_digest_of_the_calls_and_their_observations() -> None:
    # Given a summarizer that answers garbage
    model = summarizer("~~ garbage ~~")
    # When the notes of four pages are written
    notes = write_notes(
        source(4), complete=model.complete, model_name="m", limits=limits(), language="en", outcomes=OUTCOMES
    )
    # Then they are the digest: each call's source and the start of what it returned, within the budget
    assert notes.source == "digest" and notes.problems == ["the reply has no facts section"]
    assert "- [3 fetch_page] Page 3: aisle 3 holds 21 parcels." in notes.facts
    assert text_tokens(notes.facts) <= int(limits().summary_tokens * 0.6)


def test_a_summarizer_that_refuses_the_call_gives_way_to_the_digest() -> None:
    # Given a summarizer that refuses the request (the scripted model refuses a question it has no scenario for)
    model = summarizer("Facts:\n- x", match="^never$")
    # When the notes are written; Then the digest stands in, saying why
    notes = write_notes(
        source(2), complete=model.complete, model_name="m", limits=limits(), language="en", outcomes=OUTCOMES
    )
    assert notes.source == "digest" and notes.problems[0].startswith("the summarizer refused")


def test_calls_are_listed_with_whether_they_succeeded_and_calls_never_run_say_so() -> None:
    # Given two calls of one reply, one of which failed, and one call with no result stored
    first, second = ToolCall(id="a", name="lookup", arguments={"q": "x" * 500}), ToolCall(id="b", name="lookup")
    messages = [
        StoredMessage(role="assistant", content="", tool_calls=[first, second], iteration=1, slot=0),
        StoredMessage(role="assistant", content="", tool_calls=[ToolCall(id="c", name="lookup")], iteration=2, slot=0),
    ]
    # When their digests are made
    digests = call_digests(messages, {(1, "a"): True, (1, "b"): False})
    # Then each says how it went, and long arguments are cut short
    assert [digest.outcome for digest in digests] == ["ok", "failed", "not_run"]
    assert len(digests[0].arguments) <= 160


def test_a_summary_lists_its_latest_calls_and_counts_older_ones_so_its_item_stays_bounded() -> None:
    # Given the digests of 100 calls; When merged into a summary; Then 60 are listed and 40 counted
    digests = call_digests(page_messages(100, size=10), {(page, f"c{page}"): page % 2 == 0 for page in range(1, 101)})
    listed, earlier = merged_calls(None, digests)
    assert (len(listed), listed[0].iteration) == (60, 41)
    assert (earlier["fetch_page"].calls, earlier["fetch_page"].ok) == (40, 20)
