"""extract_question and render_prompt: from a request body to the prompt the model sees."""

from __future__ import annotations

from stepwise.config.intent import Category
from stepwise.intent import DEFAULT_PROMPT, extract_question, render_prompt

CHAT_BODY = {
    "model": "stepwise",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What did the ETF close at?"},
        {"role": "assistant", "content": "Which ETF?"},
        {"role": "user", "content": "The S&P 500 one."},
    ],
}


def test_the_default_path_takes_the_last_message() -> None:
    # Given a chat completions body
    # When the question is extracted with Higress's default path messages.@reverse.0.content
    question = extract_question(CHAT_BODY)
    # Then it is the last message's content
    assert question == "The S&P 500 one."


def test_a_path_with_an_index_takes_that_message() -> None:
    # Given the same body
    # When the path selects the second message
    question = extract_question(CHAT_BODY, "messages.1.content")
    # Then that message's content is returned
    assert question == "What did the ETF close at?"


def test_a_plain_input_string_is_the_question() -> None:
    # Given a Stepwise run request, which has `input` and no messages
    body = {"input": "Convert 100 EUR to USD", "session_id": "s-1"}
    # When the question is extracted with the default path
    # Then the input is used
    assert extract_question(body) == "Convert 100 EUR to USD"


def test_content_given_as_parts_yields_its_text() -> None:
    # Given a last message whose content is a list of parts
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "Is this invoice valid?"}]}]}
    # When the question is extracted / Then the text part is returned
    assert extract_question(body) == "Is this invoice valid?"


def test_a_body_without_a_question_gives_none() -> None:
    # Given bodies with nothing at the path and no input
    # When the question is extracted / Then there is none
    assert extract_question({"messages": []}) is None
    assert extract_question({"messages": [{"role": "user", "content": 42}]}) is None


def test_the_default_prompt_carries_the_question_and_every_option() -> None:
    # Given two categories
    categories = [
        Category(use_for="intent-route", options=["Finance", "Law", "Others"]),
        Category(use_for="disable-cache", options=["Time-sensitive", "Non-time-sensitive"]),
    ]
    # When the built-in prompt is rendered
    prompt = render_prompt(None, "Is the market open?", categories)
    # Then it holds the question, each category and option, and no placeholder is left
    assert "Is the market open?" in prompt
    assert all(word in prompt for word in ["intent-route", "Others", "disable-cache", "Non-time-sensitive"])
    assert "${" not in prompt and prompt != DEFAULT_PROMPT


def test_a_question_containing_a_placeholder_is_not_expanded() -> None:
    # Given a question that contains the categories placeholder itself
    categories = [Category(use_for="intent-route", options=["Finance", "Others"])]
    # When a template is rendered with it
    prompt = render_prompt("Q: ${question}", "show me ${categories}", categories)
    # Then the question is inserted as written
    assert prompt == "Q: show me ${categories}"


def test_a_higress_printf_style_prompt_is_filled_in_order() -> None:
    # Given a Higress prompt with %s for the question, then the categories
    categories = [Category(use_for="intent_category", options=["金融", "电商"])]
    # When it is rendered
    prompt = render_prompt("The question is '%s', the categories are '%s'.", "股市怎么样?", categories)
    # Then the question fills the first %s and the categories the second
    assert prompt.startswith("The question is '股市怎么样?', the categories are '")
    assert "金融" in prompt and "%s" not in prompt
