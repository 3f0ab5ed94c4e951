"""What a provider's overflow refusal stated, read back where the state machine hands the error on.

LLMCall's `ContextWindowExceeded` reaches Compact through a Catch, as Step Functions records it: `$.overflow`'s
`Cause` is the Lambda error's JSON document, whose `errorMessage` ends with what the refusal stated as one JSON
object (`stepwise.errors.STATED_LIMITS_MARK`). A document that is not one, or states nothing, states nothing.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, PositiveInt, ValidationError

from stepwise.errors import STATED_LIMITS_MARK
from stepwise.inputs.validation_problems import describe_problems


class StatedLimits(BaseModel, defer_build=True):
    """The window and the prompt's size, in tokens, an overflow refusal stated (None: not stated)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window: PositiveInt | None = None
    prompt_tokens: PositiveInt | None = None


class _LambdaError(BaseModel, defer_build=True):
    """The document Lambda reports an unhandled exception with (the fields read here)."""

    model_config = ConfigDict(extra="ignore")

    errorMessage: str


def stated_limits(cause: str | None) -> StatedLimits:
    """What the refusal behind a caught error's `cause` stated: nothing when the cause is not Lambda's error
    document or its message states nothing. A statement that does not validate raises ValueError naming the
    field and the reason."""
    if not cause:
        return StatedLimits()
    try:
        message = _LambdaError.model_validate_json(cause).errorMessage
    except ValidationError:
        return StatedLimits()
    _, mark, stated = message.rpartition(STATED_LIMITS_MARK)
    if not mark or not stated.endswith("]"):
        return StatedLimits()
    try:
        return StatedLimits.model_validate_json(stated[:-1])
    except ValidationError as exc:
        raise ValueError(f"the limits the overflow stated: {describe_problems(exc)}") from None
