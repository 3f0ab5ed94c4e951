"""The `stepwise` command as a newcomer runs it: demo, run and invoke, with their output and exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from stepwise.cli import main
from stepwise.models.api_responses import RunView
from tests.conftest import PROJECT_ROOT
from tests.e2e.conftest import ConfigWriter, react_action, react_answer
from tests.integration.test_api_handler import api_config
from tests.support.openai_server import FakeOpenAIServer, chat_completion


def test_the_demo_prints_a_react_trace_with_a_real_tool_call_and_the_answer() -> None:
    # Given nothing but the repository (the embedded DynamoDB Local keeps its data in $STEPWISE_DATA_DIR)
    out = io.StringIO()
    # When the demo runs
    code = main(["demo"], out=out)
    # Then it succeeded and printed thought, action, the example API's observation and the answer
    text = out.getvalue()
    assert code == 0
    assert "thought   I should look up the weather in Paris first." in text
    assert 'action    get_weather {"city": "Paris"}' in text
    assert "observe   get_weather (ok" in text and '"condition":"light rain"' in text
    assert "Answer: Paris has light rain" in text
    assert "status SUCCEEDED · stop_reason final_answer · iterations 3 · outcome answered" in text


def test_the_demo_asked_another_question_says_its_model_is_scripted_and_what_it_answers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a question the demo's script was not written for
    out = io.StringIO()
    # When the demo is asked it
    code = main(["demo", "What is 2+2?", "--json"], out=out)
    # Then it says, on stderr, that its model is scripted, which question it answers, and how to ask a real one
    notice = capsys.readouterr().err
    assert "its model is scripted" in notice and "weather in Paris" in notice and "stepwise run" in notice
    # And the run itself is still the demo's, on stdout alone
    assert code == 0, notice
    assert json.loads(out.getvalue())["status"] == "SUCCEEDED"


@pytest.fixture
def store_options(dynamodb_local: str, unique_table_name: str) -> list[str]:
    """The CLI options that point a command at the session's DynamoDB Local, in a table of the test's own."""
    return ["--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name]


def test_run_with_the_configured_model_prints_the_run_as_json_as_the_api_shows_it(
    write_config: ConfigWriter, store_options: list[str]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a configuration whose model is an OpenAI-compatible endpoint
        server.default(body=chat_completion(content="Forty-two."))
        model = {
            "provider": "openai",
            "base_url": server.base_url,
            "model": "m",
            "capabilities": {"native_tools": True},
        }
        config_dir = write_config(model, strategy="function_calling")
        out = io.StringIO()
        # When a question is asked with --json
        code = main(
            ["run", "What is the answer?", "--config", str(config_dir / "stepwise.yaml"), "--json", *store_options],
            out=out,
        )
    # Then the exit code is 0 and the printed run holds the model's answer
    run = json.loads(out.getvalue())
    assert code == 0
    assert (run["status"], run["answer"], run["usage"]["llm_calls"]) == ("SUCCEEDED", "Forty-two.", 1)
    # And its fields are those of GET /v1/runs/{run_id}, under the same names (`iterations`, once)
    assert set(run) == set(RunView.model_fields) and run["iterations"] == 1


def test_run_exits_non_zero_when_the_run_fails(write_config: ConfigWriter, store_options: list[str]) -> None:
    with FakeOpenAIServer() as server:
        # Given a model endpoint that rejects every request
        server.default(status=401, body={"error": {"message": "invalid api key"}})
        model = {"provider": "openai", "base_url": server.base_url, "model": "m"}
        config_dir = write_config(model)
        out = io.StringIO()
        # When a question is asked
        code = main(["run", "hi", "--config", str(config_dir / "stepwise.yaml"), *store_options], out=out)
    # Then the command fails and says why
    assert code == 1
    assert "status FAILED" in out.getvalue()
    assert "error: LLMPermanentError" in out.getvalue()


def test_run_exits_1_when_the_model_answers_429_until_the_deadline(
    write_config: ConfigWriter, store_options: list[str]
) -> None:
    with FakeOpenAIServer() as server:
        # Given a model that answers every request 429 with a Retry-After, and a run allowed 3 seconds
        limited = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
        server.default(status=429, body=limited, headers={"Retry-After": "7"})
        model = {"provider": "openai", "base_url": server.base_url, "model": "m"}
        config_dir = write_config(model, limits={"max_execution_seconds": 3})
        out = io.StringIO()
        # When a question is asked with --json
        code = main(["run", "hi", "--config", str(config_dir / "stepwise.yaml"), "--json", *store_options], out=out)
    # Then the run FAILED without an answer, keeping the provider's error, its status and wait, and the exit code is 1
    run = json.loads(out.getvalue())
    assert code == 1
    assert (run["status"], run["outcome"], run["stop_reason"], run["answer"]) == ("FAILED", "none", "deadline", None)
    assert "HTTP 429 rate_limit_exceeded" in run["error"]["message"]
    assert (run["error"]["provider_status"], run["error"]["retry_after_seconds"]) == (429, 7)


def test_run_exits_3_when_a_limit_stops_the_run_after_a_tool_returned(
    write_config: ConfigWriter, store_options: list[str]
) -> None:
    # Given a model that calls the calculator every time, even in the final round, and 2 iterations
    model = {"provider": "scripted", "scenarios": [{"turns": [react_action("calculator", {"expression": "6*7"})]}]}
    config_dir = write_config(model, builtin=["calculator"], limits={"max_iterations": 2})
    out = io.StringIO()
    # When a question is asked
    code = main(["run", "six times seven", "--config", str(config_dir / "stepwise.yaml"), *store_options], out=out)
    # Then the answer is built from what the tool returned, the outcome is partial, and the exit code is 3
    text = out.getvalue()
    assert code == 3
    assert "stop_reason max_iterations · iterations 2 · outcome partial" in text
    assert "- calculator: 42" in text


# Two calculator calls, then an answer, 100 tokens each; at 150 tokens the run asks (on_budget: ask).
_SPEND = {"usage": {"input_tokens": 60, "output_tokens": 40}}
_ASKING_MODEL = {
    "provider": "scripted",
    "scenarios": [
        {
            "turns": [
                {**react_action("calculator", {"expression": "6*7"}), **_SPEND},
                {**react_action("calculator", {"expression": "6*8"}), **_SPEND},
                {**react_answer("42 and 48."), **_SPEND},
            ]
        }
    ],
}


@pytest.mark.parametrize(
    ("typed", "code", "ending"),
    [("1000\n", 0, "stop_reason final_answer"), ("", 3, "stop_reason token_budget")],
    ids=["tokens-added", "no-input-ends"],
)
def test_run_asks_on_stdin_when_the_run_waits_at_its_budget(
    write_config: ConfigWriter,
    store_options: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    typed: str,
    code: int,
    ending: str,
) -> None:
    # Given a profile that asks at its 150-token budget, and what the person types (nothing: the input ended)
    config_dir = write_config(
        _ASKING_MODEL, builtin=["calculator"], limits={"max_total_tokens": 150, "on_budget": "ask"}
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    out = io.StringIO()
    # When a question is asked
    exit_code = main(["run", "two products", "--config", str(config_dir / "stepwise.yaml"), *store_options], out=out)
    # Then the command asked on stderr, and the run went on with more tokens, or ended at its budget
    assert "has spent 200 of its 150 tokens and waits" in capsys.readouterr().err
    assert exit_code == code
    assert ending in out.getvalue()


def test_invoke_runs_the_api_function_on_its_sample_event_as_sam_local_invoke_would(store_options: list[str]) -> None:
    # Given the sample API Gateway event that posts a question
    out = io.StringIO()
    # When it is invoked
    code = main(
        ["invoke", "ApiFunction", "-e", str(PROJECT_ROOT / "events" / "api_post_run.json"), *store_options], out=out
    )
    # Then the function answered 202 with a run id
    response = json.loads(out.getvalue())
    assert code == 0
    assert response["statusCode"] == 202
    assert json.loads(response["body"])["status"] == "QUEUED"


def test_invoke_reports_a_function_error_as_lambda_does(store_options: list[str]) -> None:
    # Given a state event naming a run that does not exist in the fresh store
    out = io.StringIO()
    # When it is invoked without --seed-run
    code = main(["invoke", "ParseFunction", "-e", str(PROJECT_ROOT / "events" / "parse.json"), *store_options], out=out)
    # Then the error is printed with its type, and the exit code says it failed
    assert code == 1
    assert json.loads(out.getvalue())["errorType"] == "RunNotFound"


def test_run_classifies_and_routes_the_question_as_post_v1_runs_does(tmp_path: Path, store_options: list[str]) -> None:
    # Given a configuration whose keyword intent routes invoice questions to the `finance` profile
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(api_config()), encoding="utf-8")
    out = io.StringIO()
    # When an invoice question is run
    code = main(
        ["run", "Where is my invoice?", "--config", str(tmp_path / "stepwise.yaml"), "--json", *store_options], out=out
    )
    # Then the run was classified and routed to finance, as the HTTP API would have
    run = json.loads(out.getvalue())
    assert code == 0
    assert (run["profile"], run["intent"], run["intent_outcome"]["source"]) == (
        "finance",
        {"intent-route": "Finance"},
        "keywords",
    )


def test_run_with_an_unknown_profile_is_one_line_naming_the_profiles(
    tmp_path: Path, store_options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a configuration with the profiles default and finance
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(api_config()), encoding="utf-8")
    # When a question is run with a profile it does not have
    code = main(
        ["run", "hi", "--config", str(tmp_path / "stepwise.yaml"), "--profile", "nope", *store_options],
        out=io.StringIO(),
    )
    # Then one line says which profiles there are
    error = capsys.readouterr().err
    assert code == 2
    assert len(error.splitlines()) == 1 and "default, finance" in error
