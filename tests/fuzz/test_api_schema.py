"""Schemathesis against a live `stepwise serve`, from the OpenAPI document the server itself publishes.

Every operation is sent generated requests, valid ones and invalid ones; every response must be a
status the document lists (never a 5xx), with the content type and body it describes, and an invalid
request must be refused. The stateful phase sends sequences of calls along the links schemathesis
infers (a run started by POST is read back and cancelled with the id it returned). The run is
deterministic and bounded for CI: `STEPWISE_FUZZ_EXAMPLES` examples per operation and mode (25 by
default; `make fuzz` sends 500), a fifth of that many call sequences.

Schemathesis' own pytest parametrisation (`from_fixture`) relies on a pytest internal that pytest 9.2
no longer has, so each operation and mode is a plain parametrised test drawing its cases from the
operation's Hypothesis strategy.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from stepwise.local.server import LocalApi
from stepwise.steps.api import ROUTES
from tests.e2e.conftest import serve
from tests.support.polling import run_seen, wait_for

EXAMPLES_PER_OPERATION = int(os.environ.get("STEPWISE_FUZZ_EXAMPLES", "25"))
API_KEY = "fuzzer"
REQUEST_TIMEOUT_SECONDS = 30
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
# This route takes no input at all, so there is no invalid request of it to generate.
INPUTLESS_ROUTES = {("GET", "/v1/openapi.json")}
FUZZ_CASES = [
    pytest.param(method, path, mode, id=f"{method} {path} {mode}")
    for method, path in ROUTES
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode is GenerationMode.POSITIVE or (method, path) not in INPUTLESS_ROUTES
]

_TOOL_CALL = json.dumps({"action": "calculator", "action_input": {"expression": "6*7"}})
_ANSWER = json.dumps({"action": "Final Answer", "action_input": "42."})
_APPROVED_CALL = json.dumps({"action": "wire", "action_input": {"amount": 1}})
# A tool that waits for approval, so the approvals route has a call to answer (the first call of a run's
# first iteration is `call_1_0`).
WIRE_TOOL = '''
from stepwise.tools import tool


@tool
def wire(amount: int) -> str:
    """Wire money.

    Args:
        amount: How much.
    """
    return f"wired {amount}"
'''
FIRST_CALL_ID = "call_1_0"
WAITING_CALL_ID = FIRST_CALL_ID
CONFIG = {
    "models": {
        "m": {
            "provider": "scripted",
            "scenarios": [
                {
                    "match": "wire",
                    "turns": [
                        {"content": f"```json\n{_APPROVED_CALL}\n```"},
                        {"content": f"```json\n{_ANSWER}\n```"},
                    ],
                },
                {"turns": [{"content": f"```json\n{_TOOL_CALL}\n```"}, {"content": f"```json\n{_ANSWER}\n```"}]},
            ],
            "prices": {"input_per_million": 1.0, "output_per_million": 2.0},
        }
    },
    "tools": {"builtin": ["calculator"], "python": [{"module": "wire_tools", "requires_approval": True}]},
    "profiles": {
        "default": {"model": "m", "strategy": "react", "protocol": "react_json"},
        # its first model call passes both caps, so its run waits at its budget for the budget route to answer
        "asking": {
            "model": "m",
            "strategy": "react",
            "protocol": "react_json",
            "limits": {"max_total_tokens": 1, "max_cost_usd": 0.000001, "on_budget": "ask"},
        },
    },
    "api": {"sync_timeout_seconds": 5},
}


@pytest.fixture(scope="module")
def served_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    """`stepwise serve` on a free loopback port, with a scripted model that calls the calculator (or, asked
    to wire money, a tool that requires approval)."""
    config_dir = tmp_path_factory.mktemp("fuzz")
    (config_dir / "wire_tools.py").write_text(WIRE_TOOL, encoding="utf-8")
    with serve(CONFIG, config_dir) as served:
        yield served


@pytest.fixture(scope="module")
def api_schema(served_api: LocalApi) -> schemathesis.BaseSchema:
    """The OpenAPI document the server publishes, loaded by schemathesis."""
    # read here rather than by schemathesis' loader, whose 10-second read timeout a loaded machine passed
    document = httpx.get(
        f"{served_api.url}/v1/openapi.json", headers={"x-api-key": API_KEY}, timeout=REQUEST_TIMEOUT_SECONDS
    )
    document.raise_for_status()
    return schemathesis.openapi.from_dict(document.json())


@pytest.fixture(scope="module")
def finished_run_id(served_api: LocalApi) -> str:
    """A run of the fuzzer's owner that ended, so reading it can answer 200 with a whole run and trace."""
    with httpx.Client(base_url=served_api.url, headers={"x-api-key": API_KEY}, timeout=30) as client:
        accepted = client.post("/v1/runs", json={"input": "What is 6 times 7?", "metadata": {"k": "v"}})
        run_id: str = accepted.json()["run_id"]
        wait_for(
            lambda: client.get(f"/v1/runs/{run_id}").json(),
            lambda run: run["status"] in TERMINAL,
            what=f"run {run_id} ended",
            shown=run_seen,
        )
    return run_id


@pytest.fixture(scope="module")
def open_run_id(served_api: LocalApi) -> str:
    """A run of the fuzzer's owner stored QUEUED and never started, so cancelling it can answer 200 once."""
    return served_api.environment.create_run("Wait for me.", owner=API_KEY).run_id


@pytest.fixture(scope="module")
def steered_run_id(served_api: LocalApi) -> str:
    """A run of the fuzzer's owner stored QUEUED and never started, asked to pause, so telling it something,
    pausing it and resuming it (once) can answer 2xx."""
    environment = served_api.environment
    run_id = environment.create_run("Steer me.", owner=API_KEY).run_id
    assert environment.runtime.store.steering.request_pause(run_id, by=API_KEY)
    return run_id


@pytest.fixture(scope="module")
def budget_waiting_run_id(served_api: LocalApi) -> str:
    """A run of the fuzzer's owner waiting at its budget, so answering it can answer 200 once."""
    with httpx.Client(base_url=served_api.url, headers={"x-api-key": API_KEY}, timeout=30) as client:
        run_id: str = client.post("/v1/runs", json={"input": "What is 6 times 7?", "profile": "asking"}).json()[
            "run_id"
        ]
        wait_for(
            lambda: client.get(f"/v1/runs/{run_id}").json(),
            lambda run: run["status"] == "WAITING_BUDGET",
            what=f"run {run_id} waits at its budget",
            shown=run_seen,
        )
    return run_id


@pytest.fixture(scope="module")
def waiting_run_id(served_api: LocalApi) -> str:
    """A run of the fuzzer's owner waiting for approval of its call `WAITING_CALL_ID`, so answering it can
    answer 200 once."""
    with httpx.Client(base_url=served_api.url, headers={"x-api-key": API_KEY}, timeout=30) as client:
        run_id: str = client.post("/v1/runs", json={"input": "Please wire 1."}).json()["run_id"]
        wait_for(
            lambda: client.get(f"/v1/runs/{run_id}").json(),
            lambda run: run["status"] == "WAITING_APPROVAL",
            what=f"run {run_id} waits for approval",
            shown=run_seen,
        )
    return run_id


@pytest.fixture(scope="module")
def http_session() -> Iterator[requests.Session]:
    """One connection pool for the whole run."""
    with requests.Session() as session:
        yield session


def ending_with_a_question(case: schemathesis.Case) -> schemathesis.Case:
    """The case with its `messages`, if it has any, replaced by one user question.

    The document cannot say how messages depend on each other (a conversation ends with the user's
    question, a `tool` message answers a call the assistant made), so without this few generated
    conversations would be accepted and the success responses would go unchecked. The other generated
    fields (model, sampling fields, response format) are kept as they are.
    """
    if isinstance(case.body, dict) and isinstance(case.body.get("messages"), list):
        case.body["messages"] = [{"role": "user", "content": "What is 6 times 7?"}]
    return case


def case_strategy(
    operation: schemathesis.APIOperation,
    mode: GenerationMode,
    *,
    finished_run_id: str,
    open_run_id: str,
    waiting_run_id: str,
    budget_waiting_run_id: str,
    steered_run_id: str,
) -> st.SearchStrategy[schemathesis.Case]:
    """Cases of the operation sent with the fuzzer's key, some of them steered to where the route succeeds.

    Valid conversations also come with a question at their end, run ids are random or the id of the
    fuzzer's own run (one still open, for cancelling; one waiting for approval, and one at its budget, for
    answering; one open and asked to pause, for steering), and model
    ids random or the configuration's profile.
    """
    generated = operation.as_strategy(mode, headers={"x-api-key": API_KEY})
    if mode is not GenerationMode.POSITIVE:
        return generated
    if "/steps/" in operation.path:
        # the finished run's first iteration called the calculator: its step is there to read, whichever
        # worker runs this case and whatever the approval cases did before it
        tool_step = {"run_id": finished_run_id, "iteration": 1, "call_id": FIRST_CALL_ID}
        return generated | operation.as_strategy(mode, headers={"x-api-key": API_KEY}, path_parameters=tool_step)
    if "call_id" in operation.path:
        waiting = {"run_id": waiting_run_id, "call_id": WAITING_CALL_ID}
        return generated | operation.as_strategy(mode, headers={"x-api-key": API_KEY}, path_parameters=waiting)
    if operation.path.endswith("/budget"):
        at_budget = {"run_id": budget_waiting_run_id}
        return generated | operation.as_strategy(mode, headers={"x-api-key": API_KEY}, path_parameters=at_budget)
    if operation.path.endswith(("/messages", "/pause", "/resume")):
        steered = {"run_id": steered_run_id}
        return generated | operation.as_strategy(mode, headers={"x-api-key": API_KEY}, path_parameters=steered)
    if "run_id" in operation.path:
        own_run = {"run_id": open_run_id if operation.path.endswith("/cancel") else finished_run_id}
        return generated | operation.as_strategy(mode, headers={"x-api-key": API_KEY}, path_parameters=own_run)
    if "model_id" in operation.path:
        profile = {"model_id": "default"}
        return generated | operation.as_strategy(mode, headers={"x-api-key": API_KEY}, path_parameters=profile)
    return generated | generated.map(ending_with_a_question)


@pytest.mark.parametrize(("method", "path", "mode"), FUZZ_CASES)
def test_every_response_is_documented_and_none_is_a_server_error(
    api_schema: schemathesis.BaseSchema,
    served_api: LocalApi,
    http_session: requests.Session,
    finished_run_id: str,
    open_run_id: str,
    waiting_run_id: str,
    budget_waiting_run_id: str,
    steered_run_id: str,
    method: str,
    path: str,
    mode: GenerationMode,
) -> None:
    # Given the operation as the served document describes it
    operation = api_schema[path][method]
    statuses: list[int] = []

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        case=case_strategy(
            operation,
            mode,
            finished_run_id=finished_run_id,
            open_run_id=open_run_id,
            waiting_run_id=waiting_run_id,
            budget_waiting_run_id=budget_waiting_run_id,
            steered_run_id=steered_run_id,
        )
    )
    def send(case: schemathesis.Case) -> None:
        response = case.call_and_validate(
            base_url=served_api.url, session=http_session, checks=CHECKS, timeout=REQUEST_TIMEOUT_SECONDS
        )
        statuses.append(response.status_code)

    # When generated requests are sent / Then each response is as documented, and never a 5xx
    send()
    # ...and valid requests did reach the route's success, so its documented body was checked too
    if mode is GenerationMode.POSITIVE:
        assert any(200 <= status < 300 for status in statuses), sorted(set(statuses))


def test_the_document_gives_every_route_a_success_response_with_a_body(served_api: LocalApi) -> None:
    # When the served document is read
    document = httpx.get(
        f"{served_api.url}/v1/openapi.json", headers={"x-api-key": API_KEY}, timeout=REQUEST_TIMEOUT_SECONDS
    ).json()
    # Then each operation documents a 2xx with a JSON body schema
    undocumented = [
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if not any(
            status.startswith("2") and "schema" in response.get("content", {}).get("application/json", {})
            for status, response in operation["responses"].items()
        )
    ]
    assert undocumented == []


@pytest.mark.parametrize("path", ["/v1/runs", "/v1/chat/completions"])
def test_a_body_that_is_not_utf8_text_is_invalid_json(served_api: LocalApi, path: str) -> None:
    # When bytes that are not UTF-8 are posted as JSON
    response = httpx.post(
        served_api.url + path,
        content=b'{"input": "\xc0\xff"}',
        headers={"x-api-key": API_KEY, "Content-Type": "application/json"},
        timeout=REQUEST_TIMEOUT_SECONDS,
    )
    # Then it is refused as a bad body, not answered as a server error
    assert (response.status_code, response.json()["error"]["type"]) == (400, "invalid_json")


@pytest.mark.parametrize(
    "wrong",
    [{"seed": False}, {"temperature": "0.5"}, {"stream": "true"}, {"n": "1"}],
    ids=["bool for integer", "string for number", "string for boolean", "string for integer"],
)
def test_a_value_of_the_wrong_json_type_is_refused_rather_than_coerced(
    served_api: LocalApi, wrong: dict[str, object]
) -> None:
    # Given a chat completion whose one optional field has a value of another JSON type
    body = {"model": "default", "messages": [{"role": "user", "content": "What is 6 times 7?"}], **wrong}
    # When it is posted
    response = httpx.post(
        f"{served_api.url}/v1/chat/completions",
        json=body,
        headers={"x-api-key": API_KEY},
        timeout=REQUEST_TIMEOUT_SECONDS,
    )
    # Then it is refused naming that field, as the document's types say it must be
    error = response.json()["error"]
    assert (response.status_code, error["type"]) == (422, "invalid_request")
    assert [problem["field"] for problem in error["details"]["errors"]] == list(wrong)


def test_sequences_of_calls_following_the_documents_links_never_get_a_server_error(
    api_schema: schemathesis.BaseSchema, served_api: LocalApi, http_session: requests.Session
) -> None:
    # Given the document's links (a run started by POST is read back by GET with the run_id it returned);
    # the profiles' routes hold no state, and their inferred link (a listed model read back) would take the
    # sequences' steps from the runs; nor would a run's step route, whose iteration and call id no answer links
    # to (it is called with generated ones in the phase without sequences)
    base_machine = api_schema.exclude(path_regex=r"^/v1/models|/steps/").as_state_machine()
    calls: list[str] = []

    class ServedApiMachine(base_machine):  # type: ignore[misc,valid-type]
        def before_call(self, case: schemathesis.Case) -> None:
            calls.append(f"{case.method} {case.formatted_path}")

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {
                "base_url": served_api.url,
                "session": http_session,
                "headers": {"x-api-key": API_KEY},
                "timeout": REQUEST_TIMEOUT_SECONDS,
            }

        def validate_response(self, response: Any, case: schemathesis.Case, **kwargs: Any) -> None:
            case.validate_response(response, checks=[not_a_server_error, status_code_conformance])

    # When sequences of calls are generated along those links / Then none is answered with a 5xx
    ServedApiMachine.run(
        settings=settings(
            max_examples=max(10, EXAMPLES_PER_OPERATION // 5),
            stateful_step_count=4,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    )
    # ...and the sequences did follow a link to a run they had started (run ids are 32 hex digits; generated
    # ones are not), whichever of the run's routes the link led to
    assert any(re.fullmatch(r"(GET|POST) /v1/runs/[0-9a-f]{32}(/.*)?", call) for call in calls), calls
