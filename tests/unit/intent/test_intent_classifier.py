"""IntentClassifier: model answers, fallbacks to defaults, keyword and off modes, and what it logs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from intent_fakes import CannedChatModel, CapturedLogs

from stepwise.config.intent import IntentConfig
from stepwise.errors import LLMPermanentError, LLMTransientError
from stepwise.intent import IntentClassifier

QUESTION = "Should I sell my ETF holdings before the quarterly invoice is due?"
DEFAULTS = {"intent-route": "Others", "disable-cache": "Time-sensitive"}


def intent_config(**overrides: Any) -> IntentConfig:
    """The `intent:` section used by these tests: two categories, a named model, optional overrides."""
    section: dict[str, Any] = {
        "mode": "llm",
        "model": "intent",
        "categories": [
            {"use_for": "intent-route", "options": ["Finance", "E-commerce", "Law", "Others"]},
            {
                "use_for": "disable-cache",
                "options": ["Time-sensitive", "Non-time-sensitive"],
                "default": "Time-sensitive",
            },
        ],
        "keywords": [
            {"use_for": "intent-route", "option": "Finance", "patterns": ["stock", "invoice", r"\bETF\b"]},
            {"use_for": "disable-cache", "option": "Non-time-sensitive", "patterns": ["quarterly"]},
        ],
    }
    section.update(overrides)
    return IntentConfig.model_validate(section)


def ticking_clock(step_seconds: float) -> Iterator[float]:
    now = 100.0
    while True:
        yield now
        now += step_seconds


def test_model_answer_sets_every_category(captured_logs: CapturedLogs) -> None:
    # Given a model that answers both categories
    model = CannedChatModel(
        '{"use_for": "intent-route", "result": "Finance"}\n{"use_for": "disable-cache", "result": "Non-time-sensitive"}'
    )
    classifier = IntentClassifier(intent_config(), model, logger=captured_logs.logger)
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then the model's answers are the result, with no fallback
    assert result.values == {"intent-route": "Finance", "disable-cache": "Non-time-sensitive"}
    assert (result.source, result.model, result.error) == ("llm", "intent-test-model", None)


def test_model_is_asked_once_with_the_question_at_temperature_zero_and_few_tokens() -> None:
    # Given a model that answers
    model = CannedChatModel('{"use_for": "intent-route", "result": "Law"}')
    classifier = IntentClassifier(intent_config(), model)
    # When a question is classified
    classifier.classify(QUESTION)
    # Then one user message carrying the question and the options was sent, deterministic and short
    (request,) = model.requests
    (message,) = request.messages
    assert message.role == "user"
    assert QUESTION in message.content and "Non-time-sensitive" in message.content
    assert request.temperature == 0
    assert request.max_tokens is not None and request.max_tokens <= 256
    assert request.tools == []


def test_partial_answer_keeps_what_the_model_said_and_defaults_the_rest() -> None:
    # Given a model that answers only one of two categories
    model = CannedChatModel('{"use_for": "intent-route", "result": "Law"}')
    classifier = IntentClassifier(intent_config(), model)
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then the answered category comes from the model and the other is its default, and the gap is named
    assert result.values == {"intent-route": "Law", "disable-cache": "Time-sensitive"}
    assert result.source == "llm"
    assert result.error is not None and "disable-cache" in result.error


@pytest.mark.parametrize(
    "failure",
    [LLMTransientError("HTTP 503 from provider"), TimeoutError("read timed out"), LLMPermanentError("HTTP 400")],
    ids=["transient", "timeout", "permanent"],
)
def test_model_failure_falls_back_to_every_default(failure: BaseException) -> None:
    # Given a model call that fails
    classifier = IntentClassifier(intent_config(), CannedChatModel(failure))
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then the request is not failed: every category gets its default and the reason is recorded
    assert result.values == DEFAULTS
    assert result.source == "default"
    assert result.error is not None and result.error.startswith("model call")


def test_an_unexpected_exception_from_the_model_also_falls_back() -> None:
    # Given a model client with a bug of its own
    classifier = IntentClassifier(intent_config(), CannedChatModel(KeyError("choices")))
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then the defaults are used and the error type is named
    assert (result.values, result.source, result.error) == (DEFAULTS, "default", "model call failed: KeyError")


def test_answer_naming_no_option_falls_back_to_defaults() -> None:
    # Given a model that answers with something that is not an option
    classifier = IntentClassifier(intent_config(), CannedChatModel("Weather"))
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then every category gets its default
    assert (result.values, result.source) == (DEFAULTS, "default")
    assert result.error is not None


def test_a_not_found_answer_leaves_every_category_unset() -> None:
    # Given a model that answers NotFound, as the Higress prompt tells it to when nothing fits
    classifier = IntentClassifier(intent_config(), CannedChatModel("'NotFound'"))
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then no category is set (routing applies its default profile), and the record says why
    assert (result.values, result.source) == ({}, "default")
    assert result.error == "NotFound for intent-route, disable-cache; left unset, routing uses its default"


def test_a_not_found_answer_for_one_category_leaves_only_that_one_unset() -> None:
    # Given a model that answers one category and NotFound for the other
    answer = (
        '{"use_for": "intent-route", "result": "NotFound"}\n{"use_for": "disable-cache", "result": "Time-sensitive"}'
    )
    classifier = IntentClassifier(intent_config(), CannedChatModel(answer))
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then only the answered category is set
    assert result.values == {"disable-cache": "Time-sensitive"}


def test_keyword_mode_classifies_without_calling_a_model() -> None:
    # Given keyword mode and a model that must not be called
    model = CannedChatModel()
    classifier = IntentClassifier(intent_config(mode="keywords"), model)
    # When a question containing configured keywords is classified
    result = classifier.classify(QUESTION)
    # Then the keyword rules decide and no model call was made
    assert result.values == {"intent-route": "Finance", "disable-cache": "Non-time-sensitive"}
    assert result.source == "keywords"
    assert model.requests == []


def test_keyword_mode_without_a_match_gives_defaults() -> None:
    # Given keyword mode
    classifier = IntentClassifier(intent_config(mode="keywords"), None)
    # When a question with none of the keywords is classified
    result = classifier.classify("What is the weather like in Hangzhou?")
    # Then every category gets its default
    assert (result.values, result.source) == (DEFAULTS, "default")


def test_keywords_first_skips_the_model_when_every_category_matched() -> None:
    # Given llm mode with keywords as a first pass
    model = CannedChatModel()
    classifier = IntentClassifier(intent_config(keywords_first=True), model)
    # When the keywords settle every category
    result = classifier.classify(QUESTION)
    # Then the model is not asked
    assert result.source == "keywords"
    assert model.requests == []


def test_keywords_first_asks_the_model_only_about_the_rest() -> None:
    # Given llm mode with keywords as a first pass, and a question only the route keywords match
    model = CannedChatModel('{"use_for": "disable-cache", "result": "Non-time-sensitive"}')
    classifier = IntentClassifier(intent_config(keywords_first=True), model)
    # When it is classified
    result = classifier.classify("How do I read my stock statement?")
    # Then the keyword answer and the model's answer are combined, and the prompt left out the settled category
    assert result.values == {"intent-route": "Finance", "disable-cache": "Non-time-sensitive"}
    assert "intent-route" not in model.requests[0].messages[0].content


def test_off_mode_gives_defaults_without_calling_a_model() -> None:
    # Given classification switched off
    model = CannedChatModel()
    classifier = IntentClassifier(intent_config(mode="off"), model)
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then every category gets its default, marked as disabled, and no model was called
    assert (result.values, result.source, result.error) == (DEFAULTS, "disabled", None)
    assert model.requests == []


def test_an_empty_question_is_not_sent_to_the_model() -> None:
    # Given a model
    model = CannedChatModel()
    classifier = IntentClassifier(intent_config(), model)
    # When an empty question is classified
    result = classifier.classify("   ")
    # Then the defaults are used without a call
    assert (result.values, result.source) == (DEFAULTS, "default")
    assert model.requests == []


def test_a_missing_chat_model_falls_back_to_defaults() -> None:
    # Given llm mode but no chat model handed in
    classifier = IntentClassifier(intent_config(), None)
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then the defaults are used and the reason says so
    assert (result.values, result.source, result.error) == (DEFAULTS, "default", "no chat model configured")


def test_latency_is_measured_with_the_injected_clock() -> None:
    # Given a clock that advances 250 ms per reading
    clock = ticking_clock(0.25)
    classifier = IntentClassifier(intent_config(), CannedChatModel("Law"), clock=lambda: next(clock))
    # When a question is classified
    result = classifier.classify(QUESTION)
    # Then the latency is the difference between the two readings
    assert result.latency_ms == pytest.approx(250.0)


def test_the_log_line_has_source_model_and_latency_but_never_the_question(captured_logs: CapturedLogs) -> None:
    # Given a model whose answer echoes the question
    model = CannedChatModel(f'You asked "{QUESTION}". {{"use_for": "intent-route", "result": "Finance"}}')
    classifier = IntentClassifier(intent_config(), model, logger=captured_logs.logger)
    # When a question is classified
    classifier.classify(QUESTION)
    # Then one record tells the source, model and latency, and neither the question nor the prompt is logged
    (record,) = captured_logs.records()
    assert record["intent_source"] == "llm"
    assert record["intent_model"] == "intent-test-model"
    assert "intent_latency_ms" in record
    assert "ETF holdings" not in captured_logs.text


def test_a_failed_model_call_is_logged_as_a_warning(captured_logs: CapturedLogs) -> None:
    # Given a model call that fails
    classifier = IntentClassifier(
        intent_config(), CannedChatModel(LLMTransientError("429")), logger=captured_logs.logger
    )
    # When a question is classified
    classifier.classify(QUESTION)
    # Then the record is a warning that says why the defaults were used
    (record,) = captured_logs.records()
    assert record["level"] == "WARNING"
    assert record["intent_error"] == "model call failed: LLMTransientError"
