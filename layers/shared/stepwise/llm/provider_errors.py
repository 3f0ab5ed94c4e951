"""What a provider's refusal means: retry it, hand it to context management, or end the run — and how to fix it.

Both providers read their errors here, from the status, the provider's error code and its message as real
servers send them (tests/fixtures/providers/ keeps recorded bodies with their sources): every server's wording
of a request past the context window (OpenAI's `context_length_exceeded`, llama.cpp's
`exceed_context_size_error`, vLLM's, SGLang's, TGI's, Anthropic's, Gemini's, ...: the families of
`stepwise.overflow_wording`, which also read the window and prompt size they state), Bedrock's
`ValidationException` "Input is too long", and the account set-up errors of a fresh AWS account
(no Marketplace subscription, no Anthropic use-case form, a model that needs an inference profile or has
reached its end of life), each with the one-line fix a user needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from stepwise.errors import ContextWindowExceeded, LLMPermanentError, LLMTransientError, provider_error_text
from stepwise.overflow_wording import is_overflow_text, reported_prompt, stated_window

ModelError = LLMTransientError | LLMPermanentError
# The window and the prompt's size in tokens an error body states as fields (None: not stated there).
StatedNumbers = tuple[int | None, int | None]

# Bedrock's error codes a retry may fix (the Converse API reference lists them with 429/5xx statuses).
BEDROCK_TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelNotReadyException",
        "ModelTimeoutException",
    }
)

# Error codes of an overflow: OpenAI's `error.code`, llama.cpp's server's `error.type`, z.ai's.
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "model_context_window_exceeded"})

# (pattern on the message, the fix to print) for Bedrock errors a new account or an old model id meets.
_BEDROCK_FIXES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), fix)
    for pattern, fix in (
        (
            r"on-demand throughput isn.t supported",
            "this model is invoked through an inference profile: use its id with a geography prefix "
            "(us., eu., apac., global.) as model_id",
        ),
        (
            r"use case details|use case form",
            "submit Anthropic's use-case form once for the account (Bedrock console, Model catalog, any Anthropic "
            "model), then retry after a few minutes",
        ),
        (
            r"aws-marketplace|marketplace",
            "the first call of a third-party model subscribes the account in AWS Marketplace: call it once with a "
            "role allowed aws-marketplace:Subscribe and aws-marketplace:ViewSubscriptions",
        ),
        (
            r"provided model identifier is invalid",
            "Bedrock does not know this model id in this Region: check it against the model's card in the Bedrock "
            "user guide (a profile id is the model id with its geography or global. before it), and call a "
            "geographic profile (us., eu., ...) only from a Region of its geography",
        ),
        (
            r"end of (its )?life|legacy|no longer (available|supported)",
            "this model version has reached its end of life on Bedrock: configure a current model "
            "(see the model catalog, stepwise/config/model_catalog.yaml)",
        ),
        (
            r"not authorized to perform|don.t have access|access denied|is not authorized",
            "grant bedrock:InvokeModel on the inference profile and on its foundation model in every Region it "
            "routes to (docs/deployment.md, 'Bedrock permissions')",
        ),
    )
)


_INVALID_ID = re.compile(r"provided model identifier is invalid", re.IGNORECASE)


def is_context_overflow(message: str, code: str | None = None) -> bool:
    """True when an error says the request is longer than the model's context window."""
    return code in _OVERFLOW_CODES or is_overflow_text(message)


def openai_error(
    model: str,
    status: int,
    code: str | None,
    message: str,
    *,
    retry_after: float | None = None,
    stated: StatedNumbers = (None, None),
) -> ModelError:
    """The error of an OpenAI-compatible answer with a non-2xx `status` (`code` is `error.code`, if any;
    `retry_after` the seconds its `Retry-After` asked for; `stated` the window and the prompt's size the body
    gave as fields, llama.cpp's `n_ctx` and `n_prompt_tokens`).

    429, 5xx (Anthropic's 529 `overloaded_error` included) and 408 are transient; a context overflow is
    `ContextWindowExceeded`, with the window and prompt size stated (in the fields, else in the message);
    any other status is permanent.
    """
    text = provider_error_text(model, status, code, message, retry_after)
    if status in (408, 409, 429) or status >= 500:
        return LLMTransientError(text)
    if status in (400, 413, 422) and is_context_overflow(message, code):
        return _overflow(text, message, stated)
    return LLMPermanentError(text)


def bedrock_error(model_id: str, status: int, code: str, message: str, *, region: str | None = None) -> ModelError:
    """The error of a Bedrock `ClientError`, with the fix for the account set-up errors; `region`, the Region
    the call was made in, lets an invalid-id refusal name the Region when a geographic profile is its cause."""
    text = provider_error_text(model_id, status, code, message)
    if code in BEDROCK_TRANSIENT_CODES or status == 429 or status >= 500:
        return LLMTransientError(text)
    if code == "ValidationException" and is_context_overflow(message):
        return _overflow(text, message)
    fix = (
        bedrock_fix(message)
        if code in ("AccessDeniedException", "ResourceNotFoundException", "ValidationException")
        else None
    )
    if code == "ValidationException" and _INVALID_ID.search(message):
        from stepwise.config.profile_geography import outside_geography

        fix = outside_geography(model_id, region) or fix
    return LLMPermanentError(f"{text} (fix: {fix})" if fix else text)


def _overflow(text: str, message: str, stated: StatedNumbers = (None, None)) -> ContextWindowExceeded:
    """The overflow error, with the numbers a body's fields stated, else those its message states."""
    window, prompt_tokens = stated
    return ContextWindowExceeded(
        text,
        window=window if window is not None else stated_window(message),
        prompt_tokens=prompt_tokens if prompt_tokens is not None else reported_prompt(message),
    )


def bedrock_fix(message: str) -> str | None:
    """The one-line fix of a Bedrock refusal a fresh account or an old model id meets, if it is one."""
    return next((fix for pattern, fix in _BEDROCK_FIXES if pattern.search(message)), None)


def retry_after_seconds(headers: Mapping[str, str], *, now: float) -> float | None:
    """The wait a provider's answer asks for: `retry-after-ms` (OpenAI's), else `Retry-After` in seconds or
    as an HTTP date (RFC 9110); None when absent, unreadable or already past. `headers` are looked up by
    lower-case names (httpx's are case-insensitive)."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return _a_wait(float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return _a_wait(float(value))
    except ValueError:
        pass
    try:
        return _a_wait(parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return None


def _a_wait(seconds: float) -> float | None:
    # NaN and infinity are floats too; a wait in the past asks for none
    return round(seconds, 3) if 0 < seconds < float("inf") else None
