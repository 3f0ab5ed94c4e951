"""Classifying a question before its run starts; a failure falls back to defaults, never fails the request."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from aws_lambda_powertools import Logger
from pydantic import BaseModel, ConfigDict, Field

from stepwise.config.intent import Category, IntentConfig
from stepwise.config.language import Language
from stepwise.intent.keywords import KeywordMatcher
from stepwise.intent.parsing import not_found_categories, parse_intent
from stepwise.intent.prompt import render_prompt
from stepwise.llm.base import ChatModel
from stepwise.models.messages import ChatMessage, ChatRequest

IntentSource = Literal["llm", "keywords", "default", "disabled"]

# An answer is one short JSON line per category; the cap keeps a rambling model cheap and quick.
_BASE_ANSWER_TOKENS = 32
_ANSWER_TOKENS_PER_CATEGORY = 48

_default_logger = Logger(service="stepwise", child=True)


class IntentResult(BaseModel):
    """A classification: an option per category, where it came from, and why it fell back if it did.

    A category the model answered ``NotFound`` for (and that has no keyword match) is left out, so routing
    applies its default profile.

    `error` is written by Stepwise (never the question or the model's text), so it is safe to store and log.
    """

    model_config = ConfigDict(extra="forbid")

    values: dict[str, str]
    source: IntentSource
    model: str | None = None
    latency_ms: float = Field(default=0.0, ge=0)
    error: str | None = None


@dataclass
class _Outcome:
    recognised: dict[str, str] = field(default_factory=dict)
    source: IntentSource = "default"
    model: str | None = None
    error: str | None = None
    model_failed: bool = False
    unset: list[str] = field(default_factory=list)


class IntentClassifier:
    """Classifies questions as configured: by a chat model, by keyword rules, or not at all.

    `chat_model` is built by the caller with the section's time limit; it may be None when the mode
    needs no model. `clock` (seconds, monotonic) and `logger` are injectable for tests.
    """

    def __init__(
        self,
        config: IntentConfig,
        chat_model: ChatModel | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        logger: Logger | None = None,
        language: Language = "en",
    ) -> None:
        self._config = config
        self._chat_model = chat_model
        self._clock = clock
        self._logger = logger if logger is not None else _default_logger
        self._keywords = KeywordMatcher(config.keywords)
        self._language = language

    def classify(self, question: str) -> IntentResult:
        """Classify `question`; every category gets an option, its default when nothing else. Never raises."""
        started = self._clock()
        outcome = self._decide(question)
        values = {
            use_for: option
            for use_for, option in {**self._config.defaults(), **outcome.recognised}.items()
            if use_for not in outcome.unset
        }
        result = IntentResult(
            values=values,
            source=outcome.source,
            model=outcome.model,
            latency_ms=max(0.0, (self._clock() - started) * 1000),
            error=outcome.error,
        )
        log = self._logger.warning if outcome.model_failed else self._logger.info
        log(
            "intent classified",
            extra={
                "intent_source": result.source,
                "intent_model": result.model,
                "intent_latency_ms": round(result.latency_ms, 3),
                "intent": result.values,
                "intent_error": result.error,
            },
        )
        return result

    def _decide(self, question: str) -> _Outcome:
        config = self._config
        if config.mode == "off":
            return _Outcome(source="disabled")
        if not isinstance(question, str) or not question.strip():
            return _Outcome(error="no question to classify")
        question = question[: config.max_question_chars]
        by_keywords = self._keywords.match(question) if config.mode == "keywords" or config.keywords_first else {}
        if config.mode == "keywords":
            if not by_keywords:
                return _Outcome(error="no keyword rule matched")
            return _Outcome(by_keywords, "keywords", error=self._missing_note(by_keywords))
        pending = [category for category in config.categories if category.use_for not in by_keywords]
        if not pending:
            return _Outcome(by_keywords, "keywords")
        outcome = self._ask_model(question, pending)
        recognised = {**outcome.recognised, **by_keywords}
        if outcome.recognised:
            source: IntentSource = "llm"
        elif by_keywords:
            source = "keywords"
        else:
            source = "default"
        error = outcome.error or self._missing_note(recognised, outcome.unset)
        unset = [use_for for use_for in outcome.unset if use_for not in by_keywords]
        return _Outcome(recognised, source, outcome.model, error, outcome.model_failed, unset)

    def _ask_model(self, question: str, categories: list[Category]) -> _Outcome:
        model = self._config.model_label
        if self._chat_model is None:
            return _Outcome(model=model, error="no chat model configured")
        prompt = render_prompt(self._config.prompt, question, categories, self._language)
        request = ChatRequest(
            messages=[ChatMessage(role="user", content=prompt)],
            max_tokens=_BASE_ANSWER_TOKENS + _ANSWER_TOKENS_PER_CATEGORY * len(categories),
            temperature=0,
        )
        try:
            completion = self._chat_model.complete(request)
        except TimeoutError:
            return _Outcome(model=model, error="model call timed out", model_failed=True)
        except Exception as exc:  # any provider failure must fall back, never fail the request
            return _Outcome(model=model, error=f"model call failed: {type(exc).__name__}", model_failed=True)
        model = completion.model or model
        recognised = parse_intent(completion.content, categories)
        unset = [name for name in not_found_categories(completion.content, categories) if name not in recognised]
        if not recognised:
            error = None if unset else "model answer named no option of any category"
            return _Outcome(model=model, error=error, unset=unset)
        return _Outcome(recognised, "llm", model, unset=unset)

    def _missing_note(self, recognised: dict[str, str], unset: list[str] | None = None) -> str | None:
        """Says which categories got their default, and which the model answered NotFound for (left unset,
        so routing applies its default profile, as Higress leaves its property unset).
        """
        not_found = [name for name in unset or [] if name not in recognised]
        missing = [
            c.use_for for c in self._config.categories if c.use_for not in recognised and c.use_for not in not_found
        ]
        notes = []
        if not_found:
            notes.append(f"NotFound for {', '.join(not_found)}; left unset, routing uses its default")
        if missing:
            notes.append(f"no answer for {', '.join(missing)}; default used")
        return "; ".join(notes) or None
