"""Exceptions become HTTP answers in one place, with the `{"error": {type, message, details}}` shape."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from stepwise.errors import StoreTransientError
from stepwise.steps.api.errors import (
    ApiError,
    GatewayTimeout,
    IdempotencyInProgress,
    InvalidRequest,
    Unavailable,
    as_api_error,
    error_response,
    is_json_content_type,
)
from stepwise.steps.executions import ExecutionStartFailed

SECRET_INPUT = "my card number is 4111 1111 1111 1111"


def validation_error(*errors: dict[str, object]) -> RequestValidationError:
    return RequestValidationError(list(errors))


@pytest.mark.parametrize(
    ("exception", "status", "error_type"),
    [
        pytest.param(validation_error({"type": "json_invalid", "loc": ("body", 3)}), 400, "invalid_json", id="json"),
        pytest.param(
            validation_error({"type": "missing", "loc": ("body", "input"), "msg": "Field required"}),
            422,
            "invalid_request",
            id="validation",
        ),
        pytest.param(StoreTransientError("throttled"), 503, "unavailable", id="store busy"),
        pytest.param(ExecutionStartFailed("Step Functions ExecutionLimitExceeded"), 503, "unavailable", id="start"),
        pytest.param(NotFoundError(), 404, "not_found", id="no route"),
        pytest.param(KeyError("bug"), 500, "internal_error", id="bug"),
    ],
)
def test_each_kind_of_failure_has_its_status_and_type(exception: Exception, status: int, error_type: str) -> None:
    # When the exception is mapped
    error = as_api_error(exception, content_type="application/json")
    # Then it has the documented status and type
    assert (error.status, error.type) == (status, error_type)


def test_a_validation_error_names_fields_and_reasons_but_never_echoes_the_input() -> None:
    # Given pydantic errors that carry the caller's input
    exception = validation_error(
        {"type": "string_type", "loc": ("body", "input"), "msg": "Input should be a valid string", "input": 1},
        {"type": "value_error", "loc": ("body",), "msg": "Value error, give exactly one", "input": SECRET_INPUT},
        {"type": "bool_parsing", "loc": ("query", "trace"), "msg": "Input should be a valid boolean"},
    )
    # When it is answered
    response = error_response(as_api_error(exception))
    # Then each problem names its field and reason, and the input is not repeated back
    body = json.loads(json.dumps(response.body))
    assert body["error"]["details"]["errors"] == [
        {"field": "input", "reason": "Input should be a valid string"},
        {"field": "body", "reason": "give exactly one"},
        {"field": "trace (query parameter)", "reason": "Input should be a valid boolean"},
    ]
    assert SECRET_INPUT not in json.dumps(body)


def test_a_body_sent_as_a_form_is_unsupported_media_rather_than_a_confusing_validation_error() -> None:
    # When Powertools could not read a form-encoded body as the model
    error = as_api_error(
        validation_error({"type": "missing", "loc": ("body", "input")}),
        content_type="application/x-www-form-urlencoded",
    )
    # Then the caller is told to send JSON
    assert (error.status, error.type) == (415, "unsupported_media_type")


def test_an_unexpected_error_is_a_500_whose_message_reveals_nothing() -> None:
    # When an unexpected exception carrying user text is mapped
    error = as_api_error(ValueError(SECRET_INPUT), content_type="application/json")
    # Then the answer is a generic internal error
    assert (error.status, error.message) == (500, "internal error")


def test_the_response_carries_the_status_and_the_error_shape() -> None:
    # When an API error with details is answered
    response = error_response(GatewayTimeout("too slow", details={"run_id": "r1"}))
    # Then the HTTP response has its status and the documented body
    assert response.status_code == 504
    assert response.body == {
        "error": {
            "type": "timeout",
            "message": "too slow",
            "details": {"run_id": "r1"},
            "code": "timeout",
            "param": None,
        }
    }


def test_a_long_list_of_problems_is_summarised_in_the_message_and_complete_in_the_details() -> None:
    # When five fields are at fault
    error = InvalidRequest([(f"field{n}", "bad") for n in range(5)])
    # Then the message shows three and says how many more; the details list all five
    assert error.message.endswith("(and 2 more)")
    assert len(error.details["errors"]) == 5


def test_an_unknown_query_parameter_with_a_long_name_is_named_by_its_start_and_length() -> None:
    # When a route that takes `status` is sent a parameter named with 5,000 characters
    error = InvalidRequest.of_query({"s" * 5_000: ["x"]}, known=("status",))
    # Then the 422 names its first 64 characters and how long it was, not the whole name
    assert error is not None
    [problem] = error.details["errors"]
    assert problem["field"] == "s" * 64 + "… (5000 characters) (query parameter)"
    assert len(error.message) < 300


def test_an_unknown_query_parameter_named_with_a_bidi_override_is_shown_with_it_escaped() -> None:
    # When a route is sent a parameter whose name reverses what follows it, with an escape sequence
    error = InvalidRequest.of_query({"stat\u202esu\x1b[2K": ["x"]}, known=("status",))
    # Then the 422 shows those characters as their escapes, not as what they would do to the reader's text
    assert error is not None
    [problem] = error.details["errors"]
    assert problem["field"] == "stat\\u202esu\\u001b[2K (query parameter)"


def test_thousands_of_unknown_query_parameters_are_named_ten_and_counted() -> None:
    # When a route is sent 2,000 parameters it does not take
    error = InvalidRequest.of_query({f"p{n:04}": ["x"] for n in range(2_000)}, known=("status",))
    # Then the first ten are named and the rest counted in one more problem
    assert error is not None
    fields = [problem["field"] for problem in error.details["errors"]]
    assert fields[:2] == ["p0000 (query parameter)", "p0001 (query parameter)"]
    assert fields[10:] == ["query parameters"]
    assert error.details["errors"][10]["reason"].startswith("1990 more names that are not parameters")


@pytest.mark.parametrize(
    ("content_type", "is_json"),
    [("application/json", True), ("application/json; charset=utf-8", True), ("", True), ("text/plain", False)],
)
def test_json_content_types(content_type: str, is_json: bool) -> None:
    """A missing content type counts as JSON: API clients often leave it out."""
    assert is_json_content_type(content_type) is is_json


def test_an_api_error_is_answered_as_it_is() -> None:
    """An error raised by the API's own logic already says how it is answered."""
    error = ApiError("boom")
    assert as_api_error(error) is error


@pytest.mark.parametrize(
    "error",
    [IdempotencyInProgress("the first request with this key is still being handled"), Unavailable("busy; retry")],
    ids=["idempotency_in_progress", "unavailable"],
)
def test_an_answer_worth_retrying_says_when(error: ApiError) -> None:
    # When an error the client should send again is answered
    response = error_response(error)
    # Then it says how long to wait first
    assert response.headers["Retry-After"] == "1"
