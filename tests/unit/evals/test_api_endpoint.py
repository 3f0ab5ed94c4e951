"""The API `stepwise eval --against` talks to, distrusted: its URL and key are checked before any request, no
URL is built from a value outside the run-id pattern, a slow body is cut at the answer's time limit, the first
bad answer stops every later request, and an error answer is shown on one line. (The hostile answers through
the whole command are in tests/e2e/test_eval_against.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from stepwise.errors import UsageError
from stepwise.evals.api_answers import BadServer, RunAnswer, StartedRun
from stepwise.evals.api_endpoint import WAIT_SECONDS, ApiEndpoint
from stepwise.evals.runner import CaseNotRun
from tests.support.tool_server import Behaviour, Endless, Json, Raw, ScriptableToolServer, Status

START = ("v1", "runs")


@pytest.fixture(scope="module")
def api() -> Iterator[ScriptableToolServer]:
    """A loopback server each test tells how to answer `POST /v1/runs`."""
    with ScriptableToolServer(default=Status(404, "no such path")) as server:
        yield server


@pytest.fixture(scope="module")
def http_client() -> Iterator[httpx.Client]:
    """One client for the module's endpoints (each client costs a TLS context), made as the command makes it."""
    with httpx.Client(timeout=WAIT_SECONDS, follow_redirects=False) as client:
        yield client


@pytest.fixture
def endpoint(http_client: httpx.Client) -> Callable[..., ApiEndpoint]:
    """Makes endpoints with `ApiEndpoint`'s arguments, on the module's client."""

    def make(url: str, key: str = "alice", **limits: float) -> ApiEndpoint:
        return ApiEndpoint(url, key, client=http_client, **limits)  # type: ignore[arg-type]

    return make


@pytest.mark.parametrize("run_id", ["../steal?x=", "a/b", "%2e%2e", "run 1", ""])
def test_no_request_is_sent_to_a_url_built_from_a_value_outside_the_run_id_pattern(
    api: ScriptableToolServer, endpoint: Callable[..., ApiEndpoint], run_id: str
) -> None:
    # Given an endpoint on the server
    client = endpoint(api.url)
    earlier = len(api.requests)
    # When a run's view is asked for under a run id the API would never give
    with pytest.raises(UsageError, match="refused to put"):
        client.call(RunAnswer, "GET", ("v1", "runs", run_id))
    # Then nothing reached the server
    assert len(api.requests) == earlier


def test_a_body_dripped_past_the_answer_time_limit_is_a_bad_server_naming_the_limit(
    api: ScriptableToolServer, endpoint: Callable[..., ApiEndpoint]
) -> None:
    # Given a server that answers the start of a run with a body of one byte every 50 ms, never ending
    api.on("/v1/runs", Endless(piece=b" ", interval=0.05))
    client = endpoint(api.url, answer_seconds=0.5)
    # When a run is started, then the answer is given up at the time limit, naming it
    with pytest.raises(BadServer, match=r"POST /v1/runs: the answer was still arriving after 0\.5 s$"):
        client.call(StartedRun, "POST", START, body={"input": "hi"})


def test_after_a_bad_answer_no_further_request_reaches_the_server(
    api: ScriptableToolServer, endpoint: Callable[..., ApiEndpoint]
) -> None:
    # Given an endpoint that was answered something that is not JSON
    api.on("/v1/runs", Raw(b"<html>", content_type="text/html", status=202))
    client = endpoint(api.url)
    with pytest.raises(BadServer) as first:
        client.call(StartedRun, "POST", START, body={"input": "hi"})
    earlier = len(api.requests)
    # When another attempt starts a run, then it fails with the same reason, and nothing is sent
    with pytest.raises(BadServer) as second:
        client.call(StartedRun, "POST", START, body={"input": "hi"})
    assert str(second.value) == str(first.value)
    assert len(api.requests) == earlier


@pytest.mark.parametrize(
    ("answer", "failure"),
    [
        pytest.param(
            Status(500, "boom\n\x1b[31mred"),
            "POST /v1/runs: 500 boom\\n\\x1b[31mred",
            id="text with control characters",
        ),
        pytest.param(
            Json({"message": "Too Many Requests"}, status=429),
            "POST /v1/runs: 429 Too Many Requests",
            id="API Gateway's own shape",
        ),
        pytest.param(
            Json({"error": {"type": "invalid_request", "message": "input: too long"}}, status=422),
            "POST /v1/runs: 422 input: too long",
            id="the API's error",
        ),
    ],
)
def test_an_error_answer_fails_the_attempt_with_the_servers_message_on_one_line(
    api: ScriptableToolServer, endpoint: Callable[..., ApiEndpoint], answer: Behaviour, failure: str
) -> None:
    # Given a server that answers the start of a run with an error
    api.on("/v1/runs", answer)
    # When a run is started, then that attempt fails, with the message escaped to one printable line
    with pytest.raises(CaseNotRun) as error:
        endpoint(api.url).call(StartedRun, "POST", START, body={"input": "hi"})
    assert str(error.value) == failure


@pytest.mark.parametrize(
    ("url", "warned"),
    [
        ("http://api.example.com/Prod", True),
        ("http://10.0.0.7:3000", True),
        ("http://127.0.0.1:3000", False),
        ("http://localhost:3000", False),
        ("http://[::1]:3000", False),
        ("https://api.example.com/Prod", False),
    ],
)
def test_plain_http_to_a_host_that_is_not_loopback_is_warned_about(
    endpoint: Callable[..., ApiEndpoint], url: str, warned: bool
) -> None:
    # When an endpoint is made for the URL, then a warning says the key crosses the network unencrypted
    warning = endpoint(url).plain_http_warning()
    assert (warning is not None) == warned
    if warning is not None:
        assert "unencrypted; use https" in warning


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://alice:secret@api.example.com", "must not hold credentials"),
        ("https://api.example.com/Prod?stage=1", "must not hold a query or fragment"),
        ("ftp://api.example.com", "must use http or https"),
    ],
)
def test_an_against_url_the_client_cannot_trust_is_a_usage_error(
    endpoint: Callable[..., ApiEndpoint], url: str, reason: str
) -> None:
    with pytest.raises(UsageError, match=reason):
        endpoint(url)


def test_a_key_no_header_can_carry_is_a_usage_error_that_does_not_show_it(
    endpoint: Callable[..., ApiEndpoint],
) -> None:
    with pytest.raises(UsageError) as error:
        endpoint("https://api.example.com", key="sk-1234\r\nX-Evil: 1")
    assert "sk-1234" not in str(error.value)
    assert "no header carries" in str(error.value)
