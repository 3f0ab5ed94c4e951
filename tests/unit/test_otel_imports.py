"""OpenTelemetry is loaded only when STEPWISE_OTEL asks for it: every handler's import (its cold start)
stays without it otherwise. Each probe is a fresh interpreter importing the handler as Lambda does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from stepwise.config.settings import Settings
from stepwise.errors import ConfigError
from tests.conftest import PROJECT_ROOT

STATE_HANDLERS = ["iteration_guard", "llm_call", "parse", "tool_invoke", "format"]
HANDLERS = [*STATE_HANDLERS, "api", "authorizer"]


def probe(handler: str, code: str, **environment: str) -> str:
    """Run `code` after importing functions/<handler>/app.py in a fresh interpreter; its stdout."""
    script = f"import sys; sys.path.insert(0, {str(PROJECT_ROOT / 'functions' / handler)!r}); import app; {code}"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("STEPWISE_", "OTEL_"))} | {
        "TABLE_NAME": "stepwise-test",
        "AWS_DEFAULT_REGION": "us-east-1",
        **environment,
    }
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    return result.stdout.strip()


LOADED = "print(sorted({name.split('.')[0] for name in sys.modules} & {'opentelemetry'}))"


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_handler_imported_without_the_setting_loads_no_opentelemetry(handler: str) -> None:
    # Given STEPWISE_OTEL unset, when the handler module is imported, then OpenTelemetry is not loaded
    assert probe(handler, LOADED) == "[]"


def test_the_model_calls_runtime_built_with_the_setting_off_loads_no_opentelemetry() -> None:
    # Given STEPWISE_OTEL=false, when LLMCall's runtime is built (first invocation), then OpenTelemetry stays out
    assert probe("llm_call", f"app.runtime.get(); {LOADED}", STEPWISE_OTEL="false") == "[]"


def test_the_model_calls_runtime_built_with_the_setting_on_records_through_opentelemetry() -> None:
    # Given STEPWISE_OTEL=true, when LLMCall's runtime is built, then its spans are OpenTelemetry's
    code = f"print(type(app.runtime.get().spans).__name__); {LOADED}"
    assert probe("llm_call", code, STEPWISE_OTEL="true").splitlines() == ["OtelSpans", "['opentelemetry']"]


def test_the_setting_is_read_once_into_the_settings_and_refused_when_not_a_boolean() -> None:
    # Given the environment's values, when the settings are read, then STEPWISE_OTEL is a boolean, off by default
    assert Settings.from_environ({"TABLE_NAME": "table"}).otel is False
    assert Settings.from_environ({"TABLE_NAME": "table", "STEPWISE_OTEL": "true"}).otel is True
    # And OpenTelemetry's own exporter setting turns it on when STEPWISE_OTEL is unset, but not `none`
    assert Settings.from_environ({"TABLE_NAME": "table", "OTEL_TRACES_EXPORTER": "console"}).otel is True
    assert Settings.from_environ({"TABLE_NAME": "table", "OTEL_TRACES_EXPORTER": "none"}).otel is False
    off = {"TABLE_NAME": "table", "OTEL_TRACES_EXPORTER": "otlp", "STEPWISE_OTEL": "false"}
    assert Settings.from_environ(off).otel is False
    # And a value that is not one is refused, naming the variable
    with pytest.raises(ConfigError, match="STEPWISE_OTEL"):
        Settings.from_environ({"TABLE_NAME": "table", "STEPWISE_OTEL": "sometimes"})


def test_the_setting_on_without_opentelemetry_installed_says_how_to_install_it() -> None:
    # Given an interpreter where the opentelemetry package cannot be imported (as when it is not installed)
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from stepwise.errors import ConfigError\n"
        "from stepwise.telemetry.spans import spans_for\n"
        "try:\n    spans_for(True)\nexcept ConfigError as error:\n    print(error)"
    )
    # When the spans are asked for with the setting on
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # Then the configuration error says what is missing and how to add it
    assert "STEPWISE_OTEL=true needs OpenTelemetry's API" in result.stdout
    assert "pip install 'stepwise[otel]'" in result.stdout and "ADOT" in result.stdout
