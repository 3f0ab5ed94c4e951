"""Errors of the local ASL engine.

Two families: definition errors, raised when a state machine is loaded (the engine refuses what it
cannot run faithfully instead of skipping it), and `StatesFailure`, the in-flight form of an ASL error
(`{"Error", "Cause"}`) that Retry and Catch match on by name.
"""

from __future__ import annotations


class AslDefinitionError(ValueError):
    """The definition is not valid ASL; the message names the state (when there is one) and the reason."""

    def __init__(self, reason: str, *, state: str | None = None) -> None:
        self.state = state
        self.reason = reason
        super().__init__(f"state {state!r}: {reason}" if state else reason)


class AslUnsupportedError(AslDefinitionError):
    """The definition is valid ASL but uses something this engine does not implement."""


class InvalidExecutionInput(ValueError):
    """`start_execution` was given a name or an input that Step Functions would reject."""


class TaskError(Exception):
    """Raise from a `LambdaInvoker` to report a failure under an explicit ASL error name and cause.

    Any other exception an invoker raises is reported under its class name, as the Lambda integration
    reports an unhandled function error; this one is for names a class cannot have, such as
    `Runtime.MarshalError` or `Lambda.ResourceNotFoundException`.
    """

    def __init__(self, error: str, cause: str) -> None:
        self.error = error
        self.cause = cause
        super().__init__(f"{error}: {cause}")


class StatesFailure(Exception):
    """An ASL error travelling through the interpreter: `error` is its name, `cause` its text.

    Both may be None: a Fail state need not name an error.
    """

    def __init__(self, error: str | None, cause: str | None) -> None:
        self.error = error
        self.cause = cause
        super().__init__(f"{error}: {cause}")


class RuntimeFailure(StatesFailure):
    """`States.Runtime`: bad data for a path or template; never retried or caught, as on AWS."""

    def __init__(self, cause: str) -> None:
        super().__init__("States.Runtime", cause)


class IntrinsicFailure(StatesFailure):
    """`States.IntrinsicFailure`: an intrinsic function got arguments it cannot work with."""

    def __init__(self, cause: str) -> None:
        super().__init__("States.IntrinsicFailure", cause)
