"""Error types of Stepwise.

The class names are part of the state machine contract: Lambda reports an unhandled exception by its
class name (``errorType``), and ``statemachine/agent.asl.json`` retries and catches by those names.
Renaming a class here means changing the Retry/Catch lists there.
"""

from __future__ import annotations


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
    """


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


class UsageError(StepwiseError):
    """A mistake in how a `stepwise` command was called (a missing file, a busy port); printed as one line.

    Here rather than in the CLI module: under `python -m stepwise.cli` that module is loaded twice, and the
    class the local runtime raised would not be the one the command catches.
    """
