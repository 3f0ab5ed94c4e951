"""The API function of template.yaml on API Gateway events, over moto's DynamoDB and Step Functions.

No HTTP server: each event goes straight to `functions/api/app.py` as Lambda would hand it over. Moto
records the executions the handler starts (it does not run them).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from stepwise.local.embedded_dynamodb import create_table_from_template
from stepwise.local.lambda_runtime import LocalLambdaInvoker
from stepwise.local.server import api_gateway_event
from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT

TABLE = "conversations"
FINANCE_QUESTION = "Why was my invoice charged twice?"


def scripted_answer(text: str) -> dict[str, Any]:
    block = json.dumps({"action": "Final Answer", "action_input": text})
    return {"content": f"Thought: I can answer.\n```json\n{block}\n```"}


def api_config(**sections: Any) -> dict[str, Any]:
    """Two profiles; keyword intent routes invoice questions to `finance`; a short synchronous wait."""
    config: dict[str, Any] = {
        "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [scripted_answer("Done.")]}]}},
        "profiles": {
            "default": {"model": "m", "strategy": "react", "protocol": "react_json"},
            "finance": {"model": "m", "strategy": "react", "protocol": "react_json"},
        },
        "intent": {
            "mode": "keywords",
            "categories": [{"use_for": "intent-route", "options": ["Finance", "General"], "default": "General"}],
            "keywords": [{"use_for": "intent-route", "option": "Finance", "patterns": ["invoice"]}],
        },
        "routes": [{"when": {"intent-route": "Finance"}, "profile": "finance"}],
        "api": {"sync_timeout_seconds": 0.3},
    }
    config.update(sections)
    return config


@dataclass
class ApiHandler:
    """Sends API Gateway events to the handler and reads what it left in moto."""

    invoker: LocalLambdaInvoker
    dynamodb: Any
    stepfunctions: Any
    state_machine_arn: str

    def call(
        self,
        method: str,
        target: str,
        body: Any = None,
        *,
        key: str | None = "key-a",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        raw = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        sent = {"Content-Type": "application/json", **(headers or {})}
        if key is not None:
            sent["x-api-key"] = key
        event = api_gateway_event(
            method=method, target=target, headers=list(sent.items()), body=raw, host="api.test", source_ip="1.2.3.4"
        )
        response = self.invoker.invoke("ApiFunction", event)
        return response["statusCode"], json.loads(response["body"])

    def items(self) -> list[dict[str, Any]]:
        return list(self.dynamodb.scan(TableName=TABLE)["Items"])

    def executions(self) -> list[dict[str, Any]]:
        return list(self.stepfunctions.list_executions(stateMachineArn=self.state_machine_arn)["executions"])


def start_handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> ApiHandler:
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    template = SamTemplate.load(PROJECT_ROOT / "template.yaml")
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_table_from_template(dynamodb, template, TABLE)
    stepfunctions = boto3.client("stepfunctions", region_name="us-east-1")
    machine = stepfunctions.create_state_machine(
        name="agent",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn="arn:aws:iam::123456789012:role/agent",
    )
    for name, value in {
        "TABLE_NAME": TABLE,
        "STATE_MACHINE_ARN": machine["stateMachineArn"],
        "STEPWISE_CONFIG_DIR": str(tmp_path),
        "STEPWISE_CONFIG_FILE": "stepwise.yaml",
    }.items():
        monkeypatch.setenv(name, value)
    invoker = LocalLambdaInvoker(template, module_prefix=f"test_api_{uuid.uuid4().hex[:8]}_")
    return ApiHandler(invoker, dynamodb, stepfunctions, machine["stateMachineArn"])


@pytest.fixture
def handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiHandler]:
    with mock_aws():
        yield start_handler(tmp_path, monkeypatch, api_config())


def test_a_posted_question_is_stored_queued_and_its_execution_started_under_the_run_id(handler: ApiHandler) -> None:
    # When a question is posted
    status, body = handler.call("POST", "/v1/runs", {"input": "What is 6 times 7?"})
    # Then it is accepted, stored QUEUED for its owner, and one execution is named after the run
    assert (status, body["status"], body["poll_url"]) == (202, "QUEUED", f"/v1/runs/{body['run_id']}")
    meta = next(item for item in handler.items() if item["sk"]["S"] == "META")
    assert (meta["owner"]["S"], meta["status"]["S"]) == ("key-a", "QUEUED")
    executions = handler.executions()
    assert [execution["name"] for execution in executions] == [body["run_id"]]


def test_a_queued_run_is_read_back_by_its_id_and_by_its_execution_arn(handler: ApiHandler) -> None:
    # Given a posted question
    _, accepted = handler.call("POST", "/v1/runs", {"input": "What is 6 times 7?"})
    run_id = accepted["run_id"]
    arn = f"arn:aws:states:us-east-1:123456789012:execution:agent:{run_id}"
    # When it is read by run id (with its trace) and by execution ARN
    by_id = handler.call("GET", f"/v1/runs/{run_id}?trace=true")
    by_arn = handler.call("GET", f"/v1/runs/{arn}")
    # Then both show the queued run; nothing has run yet, so the trace is empty
    assert by_id[0] == by_arn[0] == 200
    assert (by_id[1]["status"], by_id[1]["trace"], by_arn[1]["run_id"]) == ("QUEUED", [], run_id)


def test_another_callers_run_is_not_found(handler: ApiHandler) -> None:
    # Given a run posted with one API key
    _, accepted = handler.call("POST", "/v1/runs", {"input": "What is 6 times 7?"}, key="key-a")
    # When another key asks for it
    status, body = handler.call("GET", f"/v1/runs/{accepted['run_id']}", key="key-b")
    # Then it does not exist for them
    assert (status, body["error"]["type"]) == (404, "not_found")


def test_a_request_without_a_caller_identity_is_unauthorized_and_stores_nothing(handler: ApiHandler) -> None:
    # When a question is posted with no API key (nor IAM identity) in the request context
    status, body = handler.call("POST", "/v1/runs", {"input": "hi"}, key=None)
    # Then it is refused and nothing is stored or started
    assert (status, body["error"]["type"]) == (401, "unauthorized")
    assert handler.items() == [] and handler.executions() == []


def test_an_iam_caller_is_the_owner_of_the_runs_it_starts(handler: ApiHandler) -> None:
    # Given an IAM-signed request (no API key): API Gateway puts the principal in the identity
    event = json.loads((PROJECT_ROOT / "events" / "api_post_run.json").read_text(encoding="utf-8"))
    event["requestContext"]["identity"] |= {"apiKey": None, "apiKeyId": None, "userArn": "arn:aws:iam::1:user/ada"}
    # When it is handled
    response = handler.invoker.invoke("ApiFunction", event)
    # Then the run belongs to that principal
    assert response["statusCode"] == 202
    meta = next(item for item in handler.items() if item["sk"]["S"] == "META")
    assert meta["owner"]["S"] == "arn:aws:iam::1:user/ada"


def test_an_invoice_question_is_routed_to_the_finance_profile_by_its_intent(handler: ApiHandler) -> None:
    # When a question the keyword rules classify as Finance is posted
    status, body = handler.call("POST", "/v1/runs", {"input": FINANCE_QUESTION})
    # Then its intent is stored and it runs under the finance profile
    assert (status, body["intent"], body["profile"]) == (202, {"intent-route": "Finance"}, "finance")


def test_an_explicit_profile_wins_over_intent_routing(handler: ApiHandler) -> None:
    # When a Finance question names the default profile itself
    _, body = handler.call("POST", "/v1/runs", {"input": FINANCE_QUESTION, "profile": "default"})
    # Then it is classified but runs under the profile it asked for
    assert (body["intent"], body["profile"]) == ({"intent-route": "Finance"}, "default")


def test_a_session_run_starts_from_the_sessions_earlier_turns(handler: ApiHandler) -> None:
    # Given a first run in a session
    handler.call("POST", "/v1/runs", {"input": "My name is Ada.", "session_id": "s-1"})
    # When a second question is posted in the same session
    _, second = handler.call("POST", "/v1/runs", {"input": "What is my name?", "session_id": "s-1"})
    # Then its opening messages start with the earlier question
    messages = sorted(
        (item["sk"]["S"], item["content"]["S"])
        for item in handler.items()
        if item["pk"]["S"] == f"RUN#{second['run_id']}" and item["sk"]["S"].startswith("MSG#")
    )
    assert [content for _, content in messages] == ["My name is Ada.", "What is my name?"]


def test_the_same_idempotency_key_and_body_return_the_same_run_and_start_it_once(handler: ApiHandler) -> None:
    # When the same request is posted twice with one Idempotency-Key
    first = handler.call("POST", "/v1/runs", {"input": "hi"}, headers={"Idempotency-Key": "order-1"})
    second = handler.call("POST", "/v1/runs", {"input": "hi"}, headers={"Idempotency-Key": "order-1"})
    # Then both answers name the same run, and one execution was started
    assert first == second
    assert len(handler.executions()) == 1


def test_the_same_idempotency_key_with_another_body_is_a_conflict(handler: ApiHandler) -> None:
    # Given a request sent with an Idempotency-Key
    handler.call("POST", "/v1/runs", {"input": "hi"}, headers={"Idempotency-Key": "order-1"})
    # When the key is sent again with another body
    status, body = handler.call("POST", "/v1/runs", {"input": "bye"}, headers={"Idempotency-Key": "order-1"})
    # Then it is refused, and nothing more was started
    assert (status, body["error"]["type"]) == (409, "idempotency_conflict")
    assert len(handler.executions()) == 1


def test_one_idempotency_key_used_by_two_callers_starts_two_runs(handler: ApiHandler) -> None:
    # When two API keys send the same body with the same Idempotency-Key
    _, first = handler.call("POST", "/v1/runs", {"input": "hi"}, key="key-a", headers={"Idempotency-Key": "k"})
    _, second = handler.call("POST", "/v1/runs", {"input": "hi"}, key="key-b", headers={"Idempotency-Key": "k"})
    # Then each gets a run of its own
    assert first["run_id"] != second["run_id"]


def test_a_run_whose_execution_cannot_start_is_recorded_failed_and_answered_503(
    handler: ApiHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a deployment whose state machine is gone (a fresh handler instance reads the new ARN)
    monkeypatch.setenv("STATE_MACHINE_ARN", handler.state_machine_arn.replace(":agent", ":deleted"))
    handler.invoker = LocalLambdaInvoker(handler.invoker.template, module_prefix="test_api_gone_")
    # When a question is posted
    status, body = handler.call("POST", "/v1/runs", {"input": "hi"})
    # Then the caller is told to retry, and the stored run is FAILED rather than left QUEUED
    assert (status, body["error"]["type"]) == (503, "unavailable")
    meta = next(item for item in handler.items() if item["sk"]["S"] == "META")
    assert (meta["status"]["S"], meta["error"]["M"]["type"]["S"]) == ("FAILED", "ExecutionStartFailed")


def test_a_chat_completion_not_finished_in_time_is_504_with_the_run_to_poll(handler: ApiHandler) -> None:
    # When a chat completion is asked for (moto never runs the execution, so the run stays QUEUED)
    status, body = handler.call(
        "POST", "/v1/chat/completions", {"model": "default", "messages": [{"role": "user", "content": "hi"}]}
    )
    # Then after the configured wait the answer is 504, naming the started run
    assert (status, body["error"]["type"]) == (504, "timeout")
    assert [execution["name"] for execution in handler.executions()] == [body["error"]["details"]["run_id"]]


def test_the_openapi_document_is_served(handler: ApiHandler) -> None:
    # When the OpenAPI document is asked for
    status, document = handler.call("GET", "/v1/openapi.json")
    # Then it describes the run routes
    assert status == 200
    assert {"/v1/runs", "/v1/runs/{run_id}", "/v1/chat/completions"} <= set(document["paths"])
