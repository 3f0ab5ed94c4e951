"""Tool schemas offered in strict mode where they have a strict form, and a strict model's arguments read back."""

from __future__ import annotations

from typing import Any

from stepwise.config.llm import ModelCapabilities, OpenAIModelConfig
from stepwise.llm.openai_compatible import OpenAICompatibleChatModel
from stepwise.models.messages import ChatMessage, ChatRequest, ToolCall, ToolSpec
from stepwise.tools import ToolInvoker, ToolRegistry
from stepwise.tools.function_tool import tool
from stepwise.tools.strict_schema import strict_form, without_left_out_nulls
from tests.support.openai_server import FakeOpenAIServer, chat_completion

CUSTOMER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "maxLength": 512},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "line1": {"type": "string"}},
            "required": ["line1"],
            "additionalProperties": False,
        },
        "tax_exempt": {"enum": ["none", "exempt"]},
    },
    "required": ["email"],
    "additionalProperties": False,
}


def test_a_closed_schema_is_made_strict_with_optional_properties_nullable() -> None:
    # Given a closed object with optional fields and a length limit
    # When its strict form is written
    strict = strict_form(CUSTOMER)
    # Then every property is required, the optional ones take null, and the length limit is left to us
    assert strict == {
        "type": "object",
        "properties": {
            "email": {"type": "string"},
            "address": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"city": {"type": ["string", "null"]}, "line1": {"type": "string"}},
                        "required": ["city", "line1"],
                        "additionalProperties": False,
                    },
                    {"type": "null"},
                ]
            },
            "tax_exempt": {"anyOf": [{"enum": ["none", "exempt"]}, {"type": "null"}]},
        },
        "required": ["email", "address", "tax_exempt"],
        "additionalProperties": False,
    }


def test_an_open_object_has_no_strict_form() -> None:
    # Given a body with free-form metadata, as Stripe's has
    schema = {**CUSTOMER, "properties": {**CUSTOMER["properties"], "metadata": {"type": "object"}}}
    # When its strict form is asked for / Then there is none: strict mode would forbid every key
    assert strict_form(schema) is None


def test_nulls_standing_for_left_out_arguments_are_dropped_and_others_kept() -> None:
    # Given a strict model's arguments, null for the fields it left out
    arguments: dict[str, Any] = {
        "email": "ada@example.com",
        "address": {"city": None, "line1": "1 Main"},
        "tax_exempt": None,
    }
    # When they are read back against the tool's own schema
    # Then the left-out fields are gone, and the rest is as sent
    assert without_left_out_nulls(arguments, CUSTOMER) == {"email": "ada@example.com", "address": {"line1": "1 Main"}}


def test_an_invoker_for_a_strict_model_reads_a_null_optional_argument_as_left_out() -> None:
    # Given a Python tool with an optional flag, behind invokers for a strict model and for any other
    @tool
    def greet(name: str, loud: bool = False) -> str:
        """Greet someone."""
        return f"HELLO {name}" if loud else f"hello {name}"

    registry = ToolRegistry([greet])
    call = ToolCall(id="c1", name="greet", arguments={"name": "Ada", "loud": None})
    # When a model sends null for the flag
    strict = ToolInvoker(registry, strict_nulls=True).invoke(call)
    other = ToolInvoker(registry).invoke(call)
    # Then the strict model's call runs with the default, and anyone else's null is a wrong value
    assert (strict.ok, strict.content) == (True, "hello Ada")
    assert other.error == "invalid arguments for greet: loud: None is not of type 'boolean'"


def test_a_model_with_strict_tools_is_sent_the_strict_form() -> None:
    # Given an OpenAI model whose provider takes strict tools, offered one tool with a strict form and one without
    with FakeOpenAIServer() as openai_server:
        openai_server.enqueue(body=chat_completion(content="Done."))
        sent = _tools_sent(openai_server)
    # Then the first tool is strict with its strict form, the second is sent as it is
    functions = [tool["function"] for tool in sent]
    assert (functions[0]["strict"], functions[0]["parameters"]) == (True, strict_form(CUSTOMER))
    assert "strict" not in functions[1] and functions[1]["parameters"] == {"type": "object", "properties": {}}


def _tools_sent(openai_server: FakeOpenAIServer) -> list[dict[str, Any]]:
    """The ``tools`` a strict-tools model sends the server when offered a closed tool and an open one."""
    config = OpenAIModelConfig(
        provider="openai",
        base_url=openai_server.base_url,
        model="gpt-test",
        api_key="sk-test-0123456789abcdef",
        capabilities=ModelCapabilities(native_tools=True, strict_tools=True),
    )
    tools = [
        ToolSpec(name="create_customer", description="Create a customer", parameters=CUSTOMER),
        ToolSpec(name="tag", description="Tag anything", parameters={"type": "object", "properties": {}}),
    ]
    model = OpenAICompatibleChatModel(config)
    # When the model is asked
    model.complete(ChatRequest(messages=[ChatMessage(role="user", content="Add Ada.")], tools=tools))
    model.close()
    tools_sent: list[dict[str, Any]] = openai_server.requests[0].body["tools"]
    return tools_sent
