"""What an overflow refusal stated crosses the state machine as data: the error carries it as fields, Lambda's error
document carries it after the error's text, and Compact's reading validates it (stepwise.models.overflow)."""

from __future__ import annotations

import json
import pickle

import pytest

from stepwise.errors import ContextWindowExceeded
from stepwise.local.asl.lambda_integration import function_error
from stepwise.models.overflow import StatedLimits, stated_limits


def lambda_cause(message: str) -> str:
    return json.dumps({"errorMessage": message, "errorType": "ContextWindowExceeded", "stackTrace": []})


def test_the_window_and_prompt_an_error_carries_are_read_back_from_its_cause() -> None:
    # Given an overflow carrying the window and the prompt size its provider stated as fields
    error = ContextWindowExceeded(
        "model m: HTTP 400: the request exceeds the available context size", window=8192, prompt_tokens=9000
    )
    # When it fails a task as Lambda reports it, and the cause Step Functions records is read back
    read = stated_limits(function_error(error).cause)
    # Then both numbers are as stated, and an error sent between processes keeps them too
    assert read == StatedLimits(window=8192, prompt_tokens=9000)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.window, copy.prompt_tokens, str(copy)) == (8192, 9000, str(error))


@pytest.mark.parametrize(
    "cause",
    [None, "States.Timeout", lambda_cause("model m: HTTP 400: Input is too long for requested model.")],
    ids=["none", "not-lambdas-document", "nothing-stated"],
)
def test_a_cause_that_states_nothing_gives_nothing(cause: str | None) -> None:
    # Given a cause without a statement / When it is read / Then nothing is stated
    assert stated_limits(cause) == StatedLimits()


def test_a_statement_that_does_not_validate_names_its_field() -> None:
    # Given a cause whose statement has a window that is no count of tokens
    cause = lambda_cause('model m: HTTP 400: too long [stated: {"window": -5}]')
    # When it is read / Then the error names the field and the reason
    with pytest.raises(ValueError, match=r"window: .*greater than 0"):
        stated_limits(cause)
