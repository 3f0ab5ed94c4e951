"""What a Lambda cold start loads: each handler's module import, and its first use of the default
configuration (config/stepwise.yaml), in a fresh interpreter.

Modules a handler does not need stay unloaded: no tracing SDK while in-process tracing is off, no MCP
client, OpenAPI importer or HTTP client unless the configuration has such tools, no JSON Schema
validator outside ToolInvoke (which checks every call's arguments) unless a profile asks for
structured output. The times are printed by `make bench`; these tests count modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from stepwise.local.defaults import LOCAL_ENVIRONMENT, PROJECT_ROOT

# Loaded only on demand; none of them belongs to the floor (boto3, one DynamoDB client).
HEAVY = (
    "aws_xray_sdk",
    "opentelemetry",
    "mcp",
    "httpx",
    "jsonschema",
    "yaml",
    "stepwise.tools.openapi",
    "stepwise.intent.classifier",
    "aws_lambda_powertools.event_handler.openapi.models",
)
STATE_HANDLERS = ("format", "iteration_guard", "llm_call", "parse", "tool_invoke")

# Imports a handler as Lambda does, then (with "first-use") builds what its first invocation builds
# from the configuration, and prints the heavy modules loaded by each stage.
_PROBE = """
import importlib.util, json, sys
heavy = json.loads(sys.argv[2])
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
app = importlib.util.module_from_spec(spec)
spec.loader.exec_module(app)
loaded = {"import": sorted(name for name in heavy if name in sys.modules)}
if hasattr(app, "services"):
    app.services.get()
else:
    runtime = app.runtime.get()
    runtime.config
    if sys.argv[1].endswith("tool_invoke/app.py"):
        runtime.tools()
loaded["first-use"] = sorted(name for name in heavy if name in sys.modules)
print(json.dumps(loaded))
"""


def _loaded(handler: str) -> dict[str, list[str]]:
    environment = (
        os.environ
        | LOCAL_ENVIRONMENT
        | {
            "TABLE_NAME": "imports",
            "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:imports",
            "STEPWISE_CONFIG_DIR": str(PROJECT_ROOT / "config"),
            "STEPWISE_CONFIG_FILE": "stepwise.yaml",
            # the template's default: Lambda's and Step Functions' active tracing, no in-process spans
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
    )
    app = PROJECT_ROOT / "functions" / handler / "app.py"
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(app), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    loaded: dict[str, list[str]] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("handler", STATE_HANDLERS)
def test_a_state_handler_imports_no_tracing_sdk_client_or_configuration(handler: str) -> None:
    # Given a state handler, with in-process tracing off as deployed
    # When a fresh interpreter imports it (a cold start's init)
    loaded = _loaded(handler)["import"]

    # Then only ToolInvoke, which checks every call's arguments against the tool's schema, has jsonschema;
    # the configuration (PyYAML) is read on the first invocation
    assert loaded == (["jsonschema"] if handler == "tool_invoke" else [])


@pytest.mark.parametrize("handler", STATE_HANDLERS)
def test_the_default_configuration_loads_only_pyyaml_into_a_state_handler(handler: str) -> None:
    # Given a state handler and config/stepwise.yaml (Bedrock by default, built-in tools, no MCP, no intent)
    # When its first invocation reads the configuration (ToolInvoke: and builds its tools)
    loaded = _loaded(handler)["first-use"]

    # Then PyYAML is the only addition: the model URLs are checked without httpx, no MCP or OpenAPI code
    assert loaded == (["jsonschema", "yaml"] if handler == "tool_invoke" else ["yaml"])


def test_the_api_handler_import_leaves_out_the_openapi_models_and_the_classifier() -> None:
    # Given the API handler
    # When a fresh interpreter imports it
    loaded = _loaded("api")["import"]

    # Then Powertools' OpenAPI models (for GET /v1/openapi.json), the intent classifier, the HTTP client,
    # jsonschema and the tracing SDK are not loaded
    assert loaded == []


def test_the_default_configuration_loads_only_pyyaml_into_the_api() -> None:
    # Given the API handler and config/stepwise.yaml, which has no intent section
    # When its first request builds the services
    loaded = _loaded("api")["first-use"]

    # Then no classifier or HTTP client is built: PyYAML, to read the configuration, is the only addition
    assert loaded == ["yaml"]
