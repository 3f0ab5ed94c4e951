"""How the API reaches the local Step Functions endpoint: kept-alive connections, and its client's headers."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from stepwise.config.settings import Settings
from stepwise.local.asl import LocalStateMachine
from stepwise.local.stepfunctions_endpoint import StepFunctionsEndpoint
from stepwise.steps.executions import StepFunctionsExecutions
from stepwise.steps.user_agent import fixed_user_agent

PASS_MACHINE = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}


@pytest.fixture
def served() -> Iterator[tuple[StepFunctionsEndpoint, LocalStateMachine]]:
    machine = LocalStateMachine(PASS_MACHINE, lambda name, payload: payload, name="agent")
    endpoint = StepFunctionsEndpoint(max_concurrent_executions=2).start()
    endpoint.attach(machine)
    yield endpoint, machine
    endpoint.stop()


def _connection(endpoint: StepFunctionsEndpoint) -> http.client.HTTPConnection:
    address = urlsplit(endpoint.url)
    return http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=5)


def _start(connection: http.client.HTTPConnection, machine: LocalStateMachine, name: str) -> http.client.HTTPResponse:
    body = json.dumps({"stateMachineArn": machine.arn, "name": name, "input": "{}"})
    headers = {"X-Amz-Target": "AWSStepFunctions.StartExecution", "Content-Type": "application/x-amz-json-1.0"}
    connection.request("POST", "/", body=body, headers=headers)
    response = connection.getresponse()
    response.read()
    return response


def test_starts_sent_one_after_another_share_one_connection(
    served: tuple[StepFunctionsEndpoint, LocalStateMachine],
) -> None:
    # Given a connection to the endpoint
    endpoint, machine = served
    connection = _connection(endpoint)
    # When three executions are started on it, one after another
    first = _start(connection, machine, "run-1")
    opened = connection.sock
    later = [_start(connection, machine, name) for name in ("run-2", "run-3")]
    # Then each is answered, and the connection stays open for the next (no connection, and no server thread,
    # per start)
    assert [response.status for response in (first, *later)] == [200, 200, 200]
    assert not any(response.will_close for response in (first, *later))
    assert connection.sock is opened
    connection.close()


def test_stopping_the_endpoint_closes_an_idle_kept_alive_connection(
    served: tuple[StepFunctionsEndpoint, LocalStateMachine],
) -> None:
    # Given a connection left open after a start
    endpoint, machine = served
    connection = _connection(endpoint)
    _start(connection, machine, "run-1")
    sock = connection.sock
    assert isinstance(sock, socket.socket)
    # When the endpoint stops
    endpoint.stop()
    # Then the connection is closed by the endpoint (its next read is the end of the stream)
    sock.settimeout(5)
    assert sock.recv(1) == b""
    connection.close()


def _headers_sent(starter: StepFunctionsExecutions, machine: LocalStateMachine) -> dict[str, str]:
    """The headers of the StartExecution `starter` sends, once it is answered."""
    sent: list[dict[str, str]] = []

    def record(request: Any, **_: Any) -> None:
        sent.append(
            {name: value.decode() if isinstance(value, bytes) else value for name, value in request.headers.items()}
        )

    client: Any = starter._client
    client.meta.events.register("before-send.sfn", record)
    starter.start("run-1", {})
    return sent[0]


def test_the_local_apis_client_sends_a_fixed_user_agent_and_no_signature(
    served: tuple[StepFunctionsEndpoint, LocalStateMachine],
) -> None:
    # Given the API's Step Functions client in a local run (the placeholder identity, the local endpoint)
    endpoint, machine = served
    settings = Settings(
        table_name="unused",
        stepfunctions_endpoint_url=endpoint.url,
        state_machine_arn=machine.arn,
        local_endpoints=True,
    )
    # When it starts an execution
    headers = _headers_sent(StepFunctionsExecutions.from_settings(settings, sync_timeout_seconds=1), machine)
    # Then the request is not signed, and its User-Agent is the one built once per process (Powertools appends
    # its own mark to every client's)
    assert "Authorization" not in headers
    assert headers["User-Agent"].startswith(fixed_user_agent())


def test_the_apis_client_with_the_callers_credentials_signs_its_requests(
    served: tuple[StepFunctionsEndpoint, LocalStateMachine], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given credentials in the environment and a client that is not local (as on Lambda)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-example")
    endpoint, machine = served
    settings = Settings(
        table_name="unused",
        stepfunctions_endpoint_url=endpoint.url,
        state_machine_arn=machine.arn,
        aws_region="eu-west-1",
    )
    # When it starts an execution
    headers = _headers_sent(StepFunctionsExecutions.from_settings(settings, sync_timeout_seconds=1), machine)
    # Then the request carries a SigV4 signature made with those credentials
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
