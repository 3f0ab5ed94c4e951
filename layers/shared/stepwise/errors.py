"""Error types of Stepwise.

The class names are part of the state machine contract: Lambda reports an unhandled exception by its
class name (``errorType``), and ``statemachine/agent.asl.json`` retries and catches by those names.
Renaming a class here means changing the Retry/Catch lists there.

A model provider's refusal is worded here too (`provider_error_text`), and read back: an error crosses
the state machine as text (Lambda's `errorMessage`), and the run's end reads the provider's HTTP status
and requested wait from it (`provider_status`, `provider_wait`). What an overflow refusal stated (the window,
the prompt's size) is data: `ContextWindowExceeded` carries it as fields, and writes it after its text as one
JSON object (`STATED_LIMITS_MARK`), which `stepwise.models.overflow` validates where the state machine hands
the error on.
"""

from __future__ import annotations

import json
import re


class StepwiseError(Exception):
    """Base of every error this project raises on purpose."""


class LLMTransientError(StepwiseError):
    """The model provider failed in a way a retry may fix: 429, 5xx, timeout, connection reset."""


class LLMPermanentError(StepwiseError):
    """The model provider rejected the request (4xx other than 429); retrying cannot help."""


class ContextWindowExceeded(LLMPermanentError):
    """The request was longer than the model's context window (OpenAI `context_length_exceeded`, Bedrock
    "input is too long" / `model_context_window_exceeded`).

    A class of its own, not retried, so the state machine can route it to context management (compact the
    conversation and call again) instead of ending the run; until it does, the run ends with its best answer.
    `window` and `prompt_tokens` are what the provider stated, in fields of its body or in its text (None when
    it did not); Lambda reports an error by its name and its text only, so they follow the text as JSON.
    """

    def __init__(self, message: str, *, window: int | None = None, prompt_tokens: int | None = None) -> None:
        self.window = window
        self.prompt_tokens = prompt_tokens
        stated = {name: value for name, value in (("window", window), ("prompt_tokens", prompt_tokens)) if value}
        super().__init__(f"{message}{STATED_LIMITS_MARK}{json.dumps(stated)}]" if stated else message)


# Opens what an overflow stated, after the error's text: ` [stated: {"window": 8192, "prompt_tokens": 9000}]`.
STATED_LIMITS_MARK = " [stated: "


class ContextWindowExhausted(LLMPermanentError):
    """The request is still longer than the model's window after the conversation was summarized and cut to
    fit (or no window is configured to fit it to).

    A name of its own: the state machine sends `ContextWindowExceeded` to Compact, and this one to
    FormatFailure, which ends the run with its best answer (stop reason `context_window`).
    """


class LLMDeadlineReached(LLMPermanentError):
    """A model call failed in a way a retry may fix, but the run's deadline leaves no time for one.

    Raised by LLMCall instead of `LLMTransientError`, whose Retry in the state machine cannot see the
    run's deadline; the run then ends with stop reason `deadline` and its best answer.
    """


_STATUS_IN_TEXT = re.compile(r": HTTP (\d{3})\b")
_WAIT_IN_TEXT = re.compile(r"\(retry after (\d+(?:\.\d+)?) s\)")


def provider_error_text(
    model: str, status: int, code: str | None, message: str, retry_after: float | None = None
) -> str:
    """`model m: HTTP 429 code: message (retry after 20 s)`, without the parts the provider left empty."""
    text = f"model {model}: HTTP {status}"
    if code:
        text = f"{text} {code}"
    text = f"{text}: {message}" if message else text
    return f"{text} (retry after {retry_after:g} s)" if retry_after is not None else text


def provider_status(text: str) -> int | None:
    """The HTTP status a provider answered with, read from a model error's text (None when it names none)."""
    found = _STATUS_IN_TEXT.search(text)
    return int(found.group(1)) if found else None


def provider_wait(text: str) -> float | None:
    """The seconds a provider asked to wait (its `Retry-After`), read from a model error's text."""
    found = _WAIT_IN_TEXT.search(text)
    return float(found.group(1)) if found else None


class StoreTransientError(StepwiseError):
    """DynamoDB throttled or was unreachable after the SDK's own retries; the state machine retries."""


class StorePermanentError(StepwiseError):
    """DynamoDB refused a request in a way no retry can fix (validation, serialization); the reason is kept."""


class InvalidStateEvent(StepwiseError):
    """A state handler received an event that does not match the state payload contract."""


class RunNotFound(StepwiseError):
    """No run with that id exists in the store."""


class RunAlreadyExists(StepwiseError):
    """A run with that id was already created."""


class ConfigError(StepwiseError):
    """The configuration cannot be loaded; the message names the file, the field and the reason."""


class ToolError(StepwiseError):
    """A tool call failed; the invoker turns it into an observation, it never fails a run."""


class ApprovalDenied(StepwiseError):
    """A tool call waiting for approval was denied: the API answers the task token with this error name
    (SendTaskFailure), and the state machine catches it so the call is recorded as denied, never run."""


class ApprovalSettled(StepwiseError):
    """A tool call's approval was already answered (or timed out) before the wait began: a replayed
    iteration. The state machine catches it and ToolInvoke acts on the stored answer."""


class ChildRunSettled(StepwiseError):
    """The wait for a child run need not begin: the child already ended, the call's observation is stored (a
    replayed iteration), or no child could be started (the message says why). The state machine catches it and
    ToolInvoke writes the call's observation from the child, or from this message."""


class UsageError(StepwiseError):
    """A mistake in how a `stepwise` command was called (a missing file, a busy port); printed as one line.

    Here rather than in the CLI module: under `python -m stepwise.cli` that module is loaded twice, and the
    class the local runtime raised would not be the one the command catches.
    """
