"""A profile with Stripe's 351 tools: the model is offered `find_tools`, searches, then calls what it found.

The real statemachine/agent.asl.json runs in the local engine with the real handlers. The model is a
loopback OpenAI-compatible server that records every request; Stripe's published OpenAPI description
(tests/fixtures/openapi/real, source in its README) is imported whole, its base URL a loopback stub API.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import react_action, react_answer
from tests.support.openai_server import FakeOpenAIServer, RecordedRequest, chat_completion
from tests.support.tool_server import Json, ScriptableToolServer

STRIPE = Path(__file__).resolve().parents[1] / "fixtures" / "openapi" / "real" / "stripe-2020-03-02.json.gz"
SEARCH = {"query": "create a customer"}
CUSTOMER = {"body": {"email": "ada@example.com", "name": "Ada Lovelace"}}
ANSWER = "Ada Lovelace is now customer cus_123."


def openai_model(server: FakeOpenAIServer) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "model": "fake-model",
        "api_key": "sk-test-key",
        "timeout_seconds": 30,
        "capabilities": {"native_tools": True, "parallel_tools": True},
    }


def native(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return chat_completion(tool_calls=[{"name": name, "arguments": arguments}])


def text(turn: dict[str, Any]) -> dict[str, Any]:
    return chat_completion(content=turn["content"])


# protocol -> (profile settings, the model's three replies)
PROTOCOLS = {
    "function_calling": (
        {"strategy": "function_calling"},
        [native("find_tools", SEARCH), native("PostCustomers", CUSTOMER), chat_completion(content=ANSWER)],
    ),
    "react_json": (
        {"strategy": "react", "protocol": "react_json"},
        [
            text(react_action("find_tools", SEARCH)),
            text(react_action("PostCustomers", CUSTOMER)),
            text(react_answer(ANSWER)),
        ],
    ),
    "react_text": (
        {"strategy": "react", "protocol": "react_text"},
        [
            chat_completion(content=f"Thought: Which tool?\nAction: find_tools\nAction Input: {json.dumps(SEARCH)}"),
            chat_completion(content=f"Thought: Found.\nAction: PostCustomers\nAction Input: {json.dumps(CUSTOMER)}"),
            chat_completion(content=f"Thought: Done.\nFinal Answer: {ANSWER}"),
        ],
    ),
    "xml": (
        {"strategy": "react", "protocol": "xml"},
        [
            chat_completion(
                content='<thought>Which tool?</thought><action>find_tools(query="create a customer")</action>'
            ),
            chat_completion(
                content=f"<thought>Found.</thought><action>PostCustomers(body={json.dumps(CUSTOMER['body'])})</action>"
            ),
            chat_completion(content=f"<thought>Done.</thought><final_answer>{ANSWER}</final_answer>"),
        ],
    ),
}


def offered_names(request: RecordedRequest) -> list[str]:
    """The tools a request offered natively."""
    return [tool["function"]["name"] for tool in request.body.get("tools", [])]


def system_prompt(request: RecordedRequest) -> str:
    return str(request.body["messages"][0]["content"])


def size(request: RecordedRequest) -> int:
    return len(json.dumps(request.body).encode())


@pytest.fixture
def stripe_config(tmp_path: Path) -> Callable[[FakeOpenAIServer, str, dict[str, Any]], Path]:
    """A config dir holding Stripe's document and one profile using all its tools on the loopback model."""
    (tmp_path / "stripe.json").write_bytes(gzip.decompress(STRIPE.read_bytes()))

    def write(model: FakeOpenAIServer, api_url: str, profile: dict[str, Any]) -> Path:
        config = {
            "models": {"gpt": openai_model(model)},
            "tools": {"openapi": [{"source": "stripe.json", "baseUrl": api_url, "internal": True}]},
            "profiles": {"default": {"model": "gpt", **profile}},
        }
        (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        return tmp_path

    return write


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_model_finds_a_tool_among_hundreds_and_calls_it(
    protocol: str, stripe_config: Callable[..., Path], local_run: Callable[..., Any]
) -> None:
    profile, replies = PROTOCOLS[protocol]
    with FakeOpenAIServer() as model, ScriptableToolServer() as stripe_api:
        # Given a profile with Stripe's 351 tools (the default threshold is 32), a model that searches for
        # "create a customer", then calls PostCustomers, then answers, and a stub of Stripe's API
        stripe_api.on("/v1/customers", Json({"id": "cus_123", "object": "customer", "name": "Ada Lovelace"}))
        for reply in replies:
            model.enqueue(body=reply)
        environment, _ = local_run(stripe_config(model, stripe_api.url, profile))

        # When a question is asked
        meta, execution = environment.ask("Create a customer for Ada Lovelace, ada@example.com")

        first, second, third = model.requests
        created = stripe_api.requests
    # Then the model's first request offered find_tools alone, not Stripe's tools
    if protocol == "function_calling":
        assert offered_names(first) == ["find_tools"]
        # And its next requests offered find_tools and the 5 tools the search found, PostCustomers first
        assert offered_names(second)[:2] == ["find_tools", "PostCustomers"]
        assert len(offered_names(second)) == 6
        assert offered_names(third) == offered_names(second)
    else:
        assert "find_tools" in system_prompt(first)
        assert "PostCustomers" not in system_prompt(first)
        assert "PostCustomers" in system_prompt(second)
    # And the first request is small: the 351 tools as OpenAI tools are 720 KB of JSON
    assert size(first) < 6_000
    # And the found tool reached Stripe's API with the customer, form-encoded
    assert [(request.method, request.path) for request in created] == [("POST", "/v1/customers")]
    assert created[0].body == b"email=ada%40example.com&name=Ada+Lovelace"
    # And the run succeeded with the model's answer after three model calls and two tool calls
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", ANSWER)
    assert (meta.usage.llm_calls, meta.usage.tool_calls) == (3, 2)


def test_a_tool_of_the_profile_not_offered_yet_still_runs_when_called_by_name(
    stripe_config: Callable[..., Path], local_run: Callable[..., Any]
) -> None:
    with FakeOpenAIServer() as model, ScriptableToolServer() as stripe_api:
        # Given the Stripe profile and a model that calls PostCustomers at once, without searching
        stripe_api.on("/v1/customers", Json({"id": "cus_123", "object": "customer"}))
        model.enqueue(body=native("PostCustomers", CUSTOMER))
        model.enqueue(body=chat_completion(content=ANSWER))
        environment, _ = local_run(stripe_config(model, stripe_api.url, {"strategy": "function_calling"}))

        # When a question is asked
        meta, _ = environment.ask("Create a customer for Ada Lovelace, ada@example.com")

        requests = model.requests
        created = stripe_api.requests
    # Then the call ran against the API although only find_tools was offered, and the run succeeded
    assert offered_names(requests[0]) == ["find_tools"]
    assert [(request.method, request.path) for request in created] == [("POST", "/v1/customers")]
    assert (meta.status, meta.answer) == ("SUCCEEDED", ANSWER)


def test_a_tool_offered_reduced_is_offered_whole_after_the_model_asks_for_its_full_schema(
    stripe_config: Callable[..., Path], local_run: Callable[..., Any]
) -> None:
    card = {"body": {"currency": "usd", "type": "virtual", "spending_controls": {"allowed_categories": ["aquariums"]}}}
    with FakeOpenAIServer() as model, ScriptableToolServer() as stripe_api:
        # Given a profile of two Stripe tools (within the threshold), PostIssuingCards offered reduced (27 KB
        # in full), and a model that asks for its full schema, then calls it with an optional nested field
        stripe_api.on("/v1/issuing/cards", Json({"id": "ic_123", "object": "issuing.card"}))
        model.enqueue(body=native("find_tools", {"tool": "PostIssuingCards"}))
        model.enqueue(body=native("PostIssuingCards", card))
        model.enqueue(body=chat_completion(content="Card ic_123 is issued."))
        profile = {"strategy": "function_calling", "tools": ["PostCustomers", "PostIssuingCards"]}
        environment, _ = local_run(stripe_config(model, stripe_api.url, profile))

        # When a question is asked
        meta, _ = environment.ask("Issue a virtual card in dollars for aquariums")

        first, second, _ = model.requests
        issued = stripe_api.requests
    # Then the first request offered both tools, the card one reduced, and find_tools for its full schema
    tools = {tool["function"]["name"]: tool["function"] for tool in first.body["tools"]}
    assert list(tools) == ["PostCustomers", "PostIssuingCards", "find_tools"]
    assert tools["PostIssuingCards"]["parameters"]["properties"]["body"]["properties"]["spending_controls"] == {}
    assert tools["find_tools"]["parameters"]["required"] == ["tool"]
    # And the next request offered it with its full schema
    full = {tool["function"]["name"]: tool["function"] for tool in second.body["tools"]}["PostIssuingCards"]
    assert (
        "allowed_categories"
        in full["parameters"]["properties"]["body"]["properties"]["spending_controls"]["properties"]
    )
    # And the call, checked against the full schema, reached the API form-encoded
    assert [(request.method, request.path) for request in issued] == [("POST", "/v1/issuing/cards")]
    assert b"spending_controls[allowed_categories][0]=aquariums" in issued[0].body.replace(b"%5B", b"[").replace(
        b"%5D", b"]"
    )
    assert (meta.status, meta.answer, meta.usage.tool_calls) == ("SUCCEEDED", "Card ic_123 is issued.", 2)
