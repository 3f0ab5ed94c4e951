"""The checks of a case on one run's outcome: what each one passes and fails, and the reason it gives."""

from __future__ import annotations

from typing import Any

from stepwise.evals.checks import check_outcome
from stepwise.evals.expect import Expect
from stepwise.evals.judge import grade
from stepwise.evals.outcome import RunOutcome, ToolCallMade
from stepwise.models.messages import ChatRequest, Completion


def outcome(**fields: Any) -> RunOutcome:
    calls = [
        ToolCallMade(iteration=1, tool="get_weather", arguments={"city": "Paris", "units": "metric"}),
        ToolCallMade(iteration=2, tool="convert_currency", arguments={"amount": 100, "from": "EUR", "to": "USD"}),
    ]
    defaults: dict[str, Any] = {
        "run_id": "r1",
        "status": "SUCCEEDED",
        "stop_reason": "final_answer",
        "answer": "Paris has light rain; 100 EUR is 108.70 USD.",
        "iterations": 3,
        "input_tokens": 900,
        "output_tokens": 100,
        "tool_calls": calls,
    }
    return RunOutcome(**(defaults | fields))


def verdicts(expect: dict[str, Any], run: RunOutcome | None = None) -> dict[str, tuple[bool, str | None]]:
    results = check_outcome(Expect.model_validate(expect), run or outcome())
    return {result.check: (result.passed, result.reason) for result in results}


def test_a_tool_call_matches_when_its_arguments_hold_the_expected_subset() -> None:
    # Given a run that called get_weather with a city and units
    # When the checks ask for a call with the city only, and for one with another city
    found = verdicts({"tool_called": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})
    missed = verdicts({"tool_called": {"name": "get_weather", "arguments": {"city": "Rome"}}})
    # Then the subset matches, and the other says which arguments the tool got
    assert found == {'tool_called get_weather {"city": "Paris"}': (True, None)}
    assert missed['tool_called get_weather {"city": "Rome"}'] == (
        False,
        'get_weather was called, but not with those arguments: {"city": "Paris", "units": "metric"}',
    )


def test_the_order_of_calls_allows_others_between_but_not_a_swap() -> None:
    # Given calls get_weather then convert_currency
    # Then that order passes and the reverse fails, listing the calls
    assert verdicts({"tool_order": ["get_weather", "convert_currency"]})["tool_order"] == (True, None)
    passed, reason = verdicts({"tool_order": ["convert_currency", "get_weather"]})["tool_order"]
    assert not passed and reason is not None and "calls: get_weather, convert_currency" in reason


def test_a_number_equal_to_an_expected_one_matches_whatever_its_json_type_but_a_boolean_does_not() -> None:
    # Given a call whose amount is 100
    # Then 100.0 matches it, True does not
    assert verdicts({"tool_called": {"name": "convert_currency", "arguments": {"amount": 100.0}}}).popitem()[1][0]
    assert not verdicts({"tool_called": {"name": "convert_currency", "arguments": {"amount": True}}}).popitem()[1][0]


def test_limits_name_the_figure_over_them() -> None:
    # Given a run of 3 iterations and 1000 tokens
    results = verdicts({"max_iterations": 2, "max_tokens": 1000, "max_cost_usd": 0.01})
    # Then the iteration limit fails with the figure, the token limit holds, and a cost without prices fails
    assert results["max_iterations 2"] == (False, "3 iterations, over 2")
    assert results["max_tokens 1000"] == (True, None)
    assert results["max_cost_usd"] == (False, "the run has no cost (its model has no prices)")


def test_the_outcome_check_tells_a_partial_answer_from_an_answered_one() -> None:
    # Given a run a limit stopped after its tools returned (SUCCEEDED, outcome partial)
    run = outcome(stop_reason="max_iterations", outcome="partial")
    # Then a check on the status alone passes, and one on the outcome fails, naming it
    assert verdicts({"status": "SUCCEEDED", "outcome": "answered"}, run) == {
        "status SUCCEEDED": (True, None),
        "outcome answered": (False, "the outcome is partial"),
    }


def test_structured_output_fields_are_read_by_dotted_path() -> None:
    # Given a run whose structured output nests a list
    run = outcome(output={"trip": {"days": [{"city": "Paris"}]}, "ok": True})
    # Then a field deep inside is compared, and a missing one says so
    results = verdicts({"output_equals": {"trip.days.0.city": "Paris", "trip.nights": 2}}, run)
    assert results["output_equals trip.days.0.city"] == (True, None)
    assert results["output_equals trip.nights"] == (False, "the structured output has no field trip.nights")


def test_the_answer_schema_reads_the_answer_as_json_without_structured_output() -> None:
    # Given a run whose answer is JSON text, and one whose answer is prose
    as_json = outcome(answer='{"city": "Paris", "rain": "yes"}')
    schema = {"type": "object", "properties": {"rain": {"type": "boolean"}}}
    # Then the schema's first problem is named, and prose is not JSON
    assert verdicts({"answer_schema": schema}, as_json)["answer_schema"] == (
        False,
        "rain: 'yes' is not of type 'boolean'",
    )
    assert verdicts({"answer_schema": schema})["answer_schema"] == (False, "the answer is not JSON")


class Judge:
    """A judge model answering with a fixed text, remembering what it was asked."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        return Completion(content=self.reply)


def test_the_judge_verdict_and_reason_are_read_from_prose_around_its_json() -> None:
    # Given a judge that wraps its verdict in prose
    judge = Judge('Sure. {"pass": false, "reason": "It forgets the umbrella."} Hope that helps.')
    # When it grades an answer
    result = grade(judge, "Recommends an umbrella.", "Rain in Paris?", "It rains.")
    # Then its verdict and reason are recorded, and it was shown the question, answer and rubric
    assert (result.passed, result.reason) == (False, "It forgets the umbrella.")
    assert "Rubric:\nRecommends an umbrella." in judge.requests[0].messages[-1].content


def test_a_judge_reply_without_a_verdict_fails_the_rubric() -> None:
    # Given a judge that answers without the JSON verdict
    result = grade(Judge("Looks good to me!"), "Polite.", "Hi?", "Hello.")
    # Then the rubric fails and says why
    assert not result.passed and result.reason is not None and "gave no" in result.reason
