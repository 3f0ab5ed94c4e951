"""What a Lambda cold start loads: each handler's module import, and its first use of the default
configuration (config/stepwise.yaml), in a fresh interpreter.

Modules a handler does not need stay unloaded: no tracing SDK (X-Ray's or OpenTelemetry's) while tracing is off, no MCP
client, OpenAPI importer or HTTP client unless the configuration has such tools, no JSON Schema
validator until ToolInvoke checks a call's arguments (a wait for approval, a replay or a denied call
checks none) or a profile asks for structured output; the streaming function loads neither Powertools'
event handler nor the chat facade until a request needs them. The times are printed by `make bench`;
these tests count modules.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from stepwise.local.defaults import LOCAL_ENVIRONMENT, PROJECT_ROOT

# Loaded only on demand; none of them belongs to the floor (boto3, one DynamoDB client).
HEAVY = (
    "aws_xray_sdk",
    "cedarpy",
    "opentelemetry",
    "mcp",
    "a2a",
    "google.protobuf",
    "httpx",
    "jsonschema",
    "re2",
    "yaml",
    "stepwise.tools.openapi",
    "stepwise.intent.classifier",
    "aws_lambda_powertools.event_handler.openapi.models",
    # the providers of models config/stepwise.yaml's profile does not call (it calls Bedrock)
    "stepwise.llm.openai_compatible",
    "stepwise.llm.scripted",
    # the configuration's optional sections (`stepwise.config.lazy_section`), absent from config/stepwise.yaml,
    # the Higress converter (a file without `models:`), and the text protocols (its profile calls tools natively)
    "stepwise.config.intent",
    "stepwise.config.guardrails",
    "stepwise.config.online_evals",
    "stepwise.config.http_api",
    "stepwise.config.openapi_source",
    "stepwise.config.mcp_source",
    "stepwise.config.a2a_source",
    "stepwise.config.higress",
    "stepwise.protocols.react_json",
    "stepwise.protocols.react_text",
    "stepwise.protocols.xml_tags",
    "stepwise.protocols.markers",
)
STATE_HANDLERS = ("format", "iteration_guard", "llm_call", "parse", "tool_invoke")

# Imports a handler as Lambda does and prints, as a fresh interpreter's import leaves them, the watched
# modules loaded and the project's pydantic models whose validator the import built; then (the "first-use"
# stage) builds what its first invocation builds from the configuration (the tool list: LLMCall, Parse and
# Format resolve the run's agent with it, its protocol included; ToolInvoke calls from it; LLMCall and Compact
# build the profile's model) and prints the watched modules loaded.
# One interpreter per handler answers every test about that handler: each test reads its own part.
_PROBE = """
import importlib.util, json, sys
watched = json.loads(sys.argv[2])
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
app = importlib.util.module_from_spec(spec)
spec.loader.exec_module(app)
loaded = {"import": sorted(name for name in watched if name in sys.modules)}
from pydantic import BaseModel
seen, built = set(), []
pending = [BaseModel]
while pending:
    for model in pending.pop().__subclasses__():
        if model not in seen:
            seen.add(model)
            pending.append(model)
            validator = model.__dict__.get("__pydantic_validator__")
            if model.__module__.startswith("stepwise.") and type(validator).__name__ == "SchemaValidator":
                built.append(f"{model.__module__}.{model.__qualname__}")
if hasattr(app, "services"):
    app.services.get()
elif hasattr(app, "runtime"):
    runtime = app.runtime.get()
    runtime.config
    runtime.tools()
    if "stepwise.steps.agent" in sys.modules:
        from types import SimpleNamespace
        from stepwise.steps.agent import agent_for
        agent_for(SimpleNamespace(profile=runtime.config.default_profile, options=None), runtime)
    if "stepwise.steps.llm_call" in sys.modules or "stepwise.steps.compaction" in sys.modules:
        profile = runtime.config.default_profile
        runtime.chat_model(runtime.config.profile(profile).model, profile=profile)
loaded["first-use"] = sorted(name for name in watched if name in sys.modules)
print(json.dumps({"loaded": loaded, "built": sorted(built)}))
"""


# ToolInvoke's tools, then one call through the guarded invoker; prints whether jsonschema was loaded at each.
_CALL_PROBE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
app = importlib.util.module_from_spec(spec)
spec.loader.exec_module(app)
from stepwise.models.messages import ToolCall
from stepwise.tools import ToolInvoker
registry = app.runtime.get().tools()
built = "jsonschema" in sys.modules
observation = ToolInvoker(registry).invoke(ToolCall(id="c1", name="calculator", arguments={"expression": "2 + 3"}))
print(json.dumps({"tools built": built, "call checked": "jsonschema" in sys.modules, "ok": observation.ok}))
"""
# The API handler answers events/api_get_run.json for a run stored in moto; prints its status and whether
# the configuration (its models, its reader) was loaded to answer it.
_POLL_PROBE = """
import importlib.util, json, sys
from moto import mock_aws
with mock_aws():
    import boto3
    client = boto3.client("dynamodb", region_name="us-east-1")
    keys = [("pk", "HASH"), ("sk", "RANGE")]
    client.create_table(
        TableName="imports", BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": name, "KeyType": kind} for name, kind in keys],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name, _ in keys],
    )
    spec = importlib.util.spec_from_file_location("app", sys.argv[1])
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    from stepwise.models.messages import ChatMessage
    from stepwise.models.run import RunMeta
    from stepwise.store import ConversationStore
    meta = RunMeta(run_id="0123456789abcdef0123456789abcdef", owner="a1b2c3d4e5", profile="default",
                   deadline=2e9, created_at="2026-11-23T10:00:00.000Z", updated_at="2026-11-23T10:00:00.000Z",
                   expires_at=2000000000)
    ConversationStore(client, "imports").create_run(meta, [ChatMessage(role="user", content="q")])
    event = json.load(open(sys.argv[2] + "/events/api_get_run.json"))
    class Context:
        function_name, memory_limit_in_mb, aws_request_id = "ApiFunction", 512, "r1"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:ApiFunction"
    response = app.lambda_handler(event, Context())
    watched = ("stepwise.config.model", "stepwise.config.loading", "stepwise.config.model_catalog")
    loaded = [name for name in watched if name in sys.modules]
    print(json.dumps({"status": response["statusCode"], "loaded": loaded}))
"""
# What one route of the API needs and another does not: each route's logic, and idempotency (keyed starts).
API_ROUTE_LOGIC = (
    "aws_lambda_powertools.utilities.idempotency",
    "stepwise.intent",
    "stepwise.steps.api.approvals",
    "stepwise.steps.api.chat",
    "stepwise.steps.api.chat_stream",
    "stepwise.steps.api.events",
    "stepwise.steps.api.lifecycle",
    "stepwise.steps.api.run_views",
    "stepwise.steps.api.runs",
)
# What a streamed run's events need, and what they never do: Powertools' event handler (the API's
# resolver, built by the first request passed on to it), the chat facade, starting runs, idempotency.
STREAM_UNNEEDED = (
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.data_classes",
    "aws_lambda_powertools.utilities.idempotency",
    "stepwise.models.chat_api",
    "stepwise.steps.api.chat",
    "stepwise.steps.api.chat_stream",
    "stepwise.steps.api.errors",
    "stepwise.steps.api.runs",
    "stepwise.intent",
)

# Project modules a handler's first call does not need, each imported by the code path that uses it: the
# secret decoder with the first secret a process learns (`stepwise.config.redaction`), the overflow wordings
# with the first provider error read (`stepwise.llm.provider_errors`), the listings of runs
# and waiting calls with the API's first listing; a child run's code with ToolInvoke's first agent call;
# the protocols' parsers with a Format whose run ended without the model's answer (or with a response
# schema), the history's rendering with a compacted run's; the configuration's models with the first call
# that reads the configuration (a handler whose first call always does builds them at import); the model
# catalog with the first model looked up (Parse and ToolInvoke look none up; LLMCall, Compact and Format load it
# at import, since their every call does).
_FIRST_CALLS_LEAVE = ("stepwise.inputs.echo_decoding", "stepwise.overflow_wording")
_STEPS_LEAVE = (*_FIRST_CALLS_LEAVE, "stepwise.store.run_listing", "stepwise.store.waiting_approvals")
# Reading a reply into a decision (`Protocol.parse`): the decisions, the native parser and the scanners of reasoning
# and of calls written in text. Parse loads them at import (every call reads a reply); LLMCall only the scanners,
# with which it stores a reply; Compact, which only builds a request, none.
REPLY_READING = (
    "stepwise.models.decision",
    "stepwise.protocols.native",
    "stepwise.protocols.reading",
    "stepwise.protocols.text_tool_calls",
    "stepwise.protocols.think_blocks",
    "stepwise.protocols.tool_call_markup",
    "stepwise.protocols.tool_call_tokens",
)
# A compacted run's summary and the wordings of a cut request: LLMCall loads them with the first summary it sends
# or message it cuts.
_COMPACTED_ONLY = ("stepwise.models.summary", "stepwise.steps.context_wording", "stepwise.steps.summary_text")
NOT_AT_IMPORT = {
    "api": _FIRST_CALLS_LEAVE,
    "stream": _FIRST_CALLS_LEAVE,
    "llm_call": (
        *_STEPS_LEAVE,
        "stepwise.models.decision",
        "stepwise.protocols.native",
        "stepwise.protocols.reading",
        *_COMPACTED_ONLY,
    ),
    "parse": (*_STEPS_LEAVE, "stepwise.config.model_catalog"),
    "compact": (*_STEPS_LEAVE, *REPLY_READING),
    "execution_ended": (*_STEPS_LEAVE, "stepwise.config.model"),
    "iteration_guard": (*_STEPS_LEAVE, "stepwise.config.model", "stepwise.steps.executions"),
    "tool_invoke": (
        *_STEPS_LEAVE,
        "stepwise.config.model_catalog",
        "stepwise.steps.child_runs",
        "stepwise.steps.context_window",
    ),
    "format": (
        *_STEPS_LEAVE,
        "stepwise.protocols.native",
        "stepwise.protocols.text_tool_calls",
        "stepwise.steps.agent",
        "stepwise.steps.context_window",
    ),
}


def _environment() -> dict[str, str]:
    return (
        os.environ
        | LOCAL_ENVIRONMENT
        | {
            "TABLE_NAME": "imports",
            "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:imports",
            "STEPWISE_CONFIG_DIR": str(PROJECT_ROOT / "config"),
            "STEPWISE_CONFIG_FILE": "stepwise.yaml",
        }
    )


# Every module a test below asks about: the probe watches them all, each test reads the ones it names.
_WATCHED = tuple(
    dict.fromkeys(
        (
            *HEAVY,
            *API_ROUTE_LOGIC,
            *STREAM_UNNEEDED,
            "stepwise.protocols",
            "stepwise.steps.agent",
            "stepwise.config.model",
            *REPLY_READING,
            *(name for names in NOT_AT_IMPORT.values() for name in names),
        )
    )
)


@functools.cache
def _probe(handler: str) -> dict[str, Any]:
    """What a fresh interpreter importing `handler`, then building its first invocation's services, loaded
    and built (one interpreter per handler for every test about it: a process start costs ~1 s of CPU)."""
    app = PROJECT_ROOT / "functions" / handler / "app.py"
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(app), json.dumps(_WATCHED)],
        capture_output=True,
        text=True,
        check=True,
        env=_environment(),
    )
    probed: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return probed


def _loaded(handler: str, modules: tuple[str, ...] = HEAVY) -> dict[str, list[str]]:
    """Which of `modules` the handler's import, then its first use, had loaded."""
    assert set(modules) <= set(_WATCHED), "the probe watches only _WATCHED"
    stages: dict[str, list[str]] = _probe(handler)["loaded"]
    return {stage: [name for name in names if name in modules] for stage, names in stages.items()}


@pytest.mark.parametrize("handler", STATE_HANDLERS)
def test_a_state_handler_imports_no_tracing_sdk_client_or_configuration(handler: str) -> None:
    # Given a state handler, with in-process tracing off as deployed
    # When a fresh interpreter imports it (a cold start's init)
    loaded = _loaded(handler)["import"]

    # Then none of them is loaded: the configuration (PyYAML) is read on the first invocation, and
    # ToolInvoke loads jsonschema when it first checks a call's arguments
    assert loaded == []


@pytest.mark.parametrize("handler", STATE_HANDLERS)
def test_the_default_configuration_loads_only_pyyaml_into_a_state_handler(handler: str) -> None:
    # Given a state handler and config/stepwise.yaml (Bedrock by default, built-in tools, no MCP, no intent)
    # When its first invocation reads the configuration and builds the tool list (and LLMCall its Bedrock model)
    loaded = _loaded(handler)["first-use"]

    # Then PyYAML is the only addition: the model URLs are checked without httpx, no MCP or OpenAPI code,
    # building the tools compiles no argument schema, and building the Bedrock model loads neither httpx nor
    # the OpenAI-compatible or scripted provider
    assert loaded == ["yaml"]


def test_tool_invoke_loads_jsonschema_when_it_checks_a_calls_arguments() -> None:
    # Given ToolInvoke's tools built from config/stepwise.yaml, as its first invocation builds them
    # When the invoker runs a call of the calculator
    result = subprocess.run(
        [sys.executable, "-c", _CALL_PROBE, str(PROJECT_ROOT / "functions" / "tool_invoke" / "app.py")],
        capture_output=True,
        text=True,
        check=True,
        env=_environment(),
    )
    loaded = json.loads(result.stdout.strip().splitlines()[-1])

    # Then jsonschema was not loaded by the tools and is loaded by the check of the call's arguments
    assert loaded == {"tools built": False, "call checked": True, "ok": True}


def test_tool_invoke_loads_no_protocol_and_no_agent_resolution() -> None:
    # Given ToolInvoke, which calls a tool and never a model
    # When a fresh interpreter imports it and its first invocation reads the configuration and the tools
    loaded = _loaded("tool_invoke", ("stepwise.protocols", "stepwise.steps.agent"))

    # Then neither the protocols nor the agent resolution that picks one is loaded, at import or after
    assert loaded == {"import": [], "first-use": []}


def test_compact_never_loads_what_reads_a_reply() -> None:
    # Given Compact, which builds a summary request from the stored conversation and reads no reply as a decision
    # When a fresh interpreter imports it and its first invocation resolves the run's agent and protocol
    loaded = _loaded("compact", REPLY_READING)

    # Then neither the decisions nor the parsers are loaded, at import or after
    assert loaded == {"import": [], "first-use": []}


def test_parse_loads_what_reads_a_reply_at_import() -> None:
    # Given Parse, whose every call reads the model's reply into a decision
    # When a fresh interpreter imports it
    loaded = _loaded("parse", REPLY_READING)["import"]

    # Then the reading is loaded in the container's init, not inside the first call
    assert loaded == sorted(REPLY_READING)


def test_the_api_handler_import_leaves_out_the_openapi_models_and_the_classifier() -> None:
    # Given the API handler
    # When a fresh interpreter imports it
    loaded = _loaded("api")["import"]

    # Then Powertools' OpenAPI models (for GET /v1/openapi.json), the intent classifier, the HTTP client,
    # jsonschema and the tracing SDK are not loaded
    assert loaded == []


def test_the_api_handler_import_leaves_out_each_routes_logic_and_idempotency() -> None:
    # Given the API handler
    # When a fresh interpreter imports it
    loaded = _loaded("api", API_ROUTE_LOGIC)["import"]

    # Then no route's logic is loaded (each route loads its own when first asked for), nor Powertools'
    # idempotency (loaded by the first start that carries an Idempotency-Key)
    assert loaded == []


def test_the_api_services_are_built_without_reading_the_configuration() -> None:
    # Given the API handler and config/stepwise.yaml
    # When its first request builds the services
    loaded = _loaded("api", (*HEAVY, "stepwise.config.model"))["first-use"]

    # Then neither the configuration (its models, PyYAML) nor a classifier or HTTP client is loaded: the
    # route that needs them loads them
    assert loaded == []


def test_polling_a_run_reads_the_configuration_first_for_its_secrets() -> None:
    # Given a stored run, and the API handler in a fresh interpreter
    # When it answers the sample GET /v1/runs/{run_id} event, a client's poll
    result = subprocess.run(
        [sys.executable, "-c", _POLL_PROBE, str(PROJECT_ROOT / "functions" / "api" / "app.py"), str(PROJECT_ROOT)],
        capture_output=True,
        text=True,
        check=True,
        env=_environment(),
    )
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    # Then it answered 200 after reading the configuration: every answer is redacted of the secrets it names
    # (what a poll-only container pays for that: docs/performance.md), without the model catalog, which no poll
    # looks up
    assert answer == {"status": 200, "loaded": ["stepwise.config.model", "stepwise.config.loading"]}


def test_the_streaming_function_import_leaves_out_the_api_resolver_and_the_chat_facade() -> None:
    # Given the streaming function, whose every request but a passed-on one is a streamed run's events
    # When a fresh interpreter imports it
    loaded = _loaded("stream", (*HEAVY, *STREAM_UNNEEDED))["import"]

    # Then Powertools' event handler and event classes, the chat facade, run starts (intent, idempotency)
    # and the heavy modules are not loaded: a streamed chat or a passed-on request loads them
    assert loaded == []


@pytest.mark.parametrize("handler", (*STATE_HANDLERS, "execution_ended", "api", "stream"))
def test_a_handler_import_builds_no_validator_of_a_configuration_section_or_a_stored_item(handler: str) -> None:
    # Given a handler
    # When a fresh interpreter imports it
    built: list[str] = _probe(handler)["built"]

    # Then of the configuration only the settings and the root (whose schema holds every section) are
    # built, the root only where the first invocation reads the file; no stored item's or API body's model
    families = (
        "stepwise.config.",
        "stepwise.store.",
        "stepwise.models.run.",
        "stepwise.models.api_requests.",
        "stepwise.models.api_responses.",
        "stepwise.models.chat_api.",
    )
    # the API and the streaming function read the file only for the routes that need it (not to read a
    # run), ExecutionEnded only for a run still open (its prices), so their import builds none
    readers_on_demand = ("iteration_guard", "api", "stream", "execution_ended")
    root = [] if handler in readers_on_demand else ["stepwise.config.model.StepwiseConfig"]
    assert [name for name in built if name.startswith(families)] == [*root, "stepwise.config.settings.Settings"]


@pytest.mark.parametrize("handler", sorted(NOT_AT_IMPORT))
def test_a_handler_import_loads_no_project_module_its_first_call_does_not_need(handler: str) -> None:
    # Given a handler, and the project's modules its first call does not need (NOT_AT_IMPORT)
    # When a fresh interpreter imports it
    loaded = _loaded(handler, NOT_AT_IMPORT[handler])["import"]

    # Then none of them is loaded: each loads with the code path that uses it
    assert loaded == []
