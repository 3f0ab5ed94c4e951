"""Intent classification by a model before a run is stored, configured as a Higress `ai-intent` block."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto import mock_aws

from tests.integration.test_api_handler import ApiHandler, api_config, start_handler
from tests.support.openai_server import FakeOpenAIServer, chat_completion

CLASSIFIER_TIMEOUT_MS = 300


@pytest.fixture
def classifier() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, classifier: FakeOpenAIServer) -> Iterator[ApiHandler]:
    # The ai-intent plugin's configuration, pasted as it is, plus Stepwise's routing table.
    higress_intent = {
        "scene": {
            "categories": [
                {"use_for": "intent-route", "options": ["Finance", "General"], "default": "General"},
            ]
        },
        "llm": {
            "proxy_url": f"{classifier.base_url}/chat/completions",
            "proxy_model": "qwen-long",
            "proxy_timeout": CLASSIFIER_TIMEOUT_MS,
        },
    }
    with mock_aws():
        yield start_handler(tmp_path, monkeypatch, api_config(intent=higress_intent))


def test_the_models_classification_routes_the_run_to_its_profile(
    handler: ApiHandler, classifier: FakeOpenAIServer
) -> None:
    # Given a classifier model that answers Finance
    classifier.enqueue(body=chat_completion(content=json.dumps({"use_for": "intent-route", "result": "Finance"})))
    # When a question is posted
    status, body = handler.call("POST", "/v1/runs", {"input": "Can I deduct my home office?"})
    # Then the configured model was asked once, and the run is stored with its intent under the finance profile
    assert [request.body["model"] for request in classifier.requests] == ["qwen-long"]
    assert (status, body["intent"], body["profile"]) == (202, {"intent-route": "Finance"}, "finance")


def test_a_classifier_that_times_out_falls_back_to_the_defaults_without_failing_the_request(
    handler: ApiHandler, classifier: FakeOpenAIServer
) -> None:
    # Given a classifier model slower than its configured timeout
    classifier.default(body=chat_completion(content="Finance"), delay_seconds=2 * CLASSIFIER_TIMEOUT_MS / 1000)
    # When a question is posted
    status, body = handler.call("POST", "/v1/runs", {"input": "Can I deduct my home office?"})
    # Then the run is still accepted, with each category's default and the default profile
    assert (status, body["intent"], body["profile"]) == (202, {"intent-route": "General"}, "default")


def test_how_the_intent_was_classified_is_stored_and_shown_with_the_run(
    handler: ApiHandler, classifier: FakeOpenAIServer
) -> None:
    # Given a classifier model slower than its configured timeout, and a run posted with it
    classifier.default(body=chat_completion(content="Finance"), delay_seconds=2 * CLASSIFIER_TIMEOUT_MS / 1000)
    _, created = handler.call("POST", "/v1/runs", {"input": "Can I deduct my home office?"})
    # When the run is read back
    status, run = handler.call("GET", f"/v1/runs/{created['run_id']}")
    # Then it says the defaults were used, which model was tried, and why it fell back
    outcome = run["intent_outcome"]
    assert status == 200
    assert (outcome["source"], outcome["model"]) == ("default", "qwen-long")
    assert outcome["error"] and outcome["latency_ms"] > 0
