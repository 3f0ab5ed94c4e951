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


def test_an_otlp_endpoint_alone_turns_the_spans_on_as_under_opentelemetry_instrument() -> None:
    # Given an OTLP endpoint and no exporter named, when the settings are read, then the spans are on
    endpoint = {"TABLE_NAME": "table", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert Settings.from_environ(endpoint).otel is True
    traces_endpoint = {"TABLE_NAME": "table", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}
    assert Settings.from_environ(traces_endpoint).otel is True
    # And an exporter set to none still wins
    assert Settings.from_environ(endpoint | {"OTEL_TRACES_EXPORTER": "none"}).otel is False


def traced(code: str, **environment: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter (a process's tracer provider is built once) with only these OTEL_*, the
    service's log lines on stderr as the `stepwise` command sends them."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("STEPWISE_", "OTEL_"))}
    script = f"from stepwise.cli import logs_to_stderr\nlogs_to_stderr()\n{code}"
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env | environment
    )


# The spans as a run records them: the process's provider configured (or not), then a span recorded.
RECORD_A_SPAN = (
    "from stepwise.telemetry.spans import spans_for\n"
    "spans = spans_for(True)\nspans = spans_for(True)\n"
    "with spans.command('stepwise run'):\n    pass\n"
    "print(type(spans).__name__)"
)


def test_an_exporter_that_is_not_installed_is_one_warning_line_and_the_run_goes_on() -> None:
    # Given OTEL_TRACES_EXPORTER naming an exporter no package installs
    # When two runtimes of one process ask for spans and record one
    result = traced(RECORD_A_SPAN, OTEL_TRACES_EXPORTER="no_such_exporter")
    # Then the process goes on with OpenTelemetry's spans (exported nowhere), and one line says why
    assert result.stdout.splitlines() == ["OtelSpans"]
    (line,) = result.stderr.splitlines()
    assert "tracing is off" in line and "no_such_exporter" in line and "pip install 'stepwise[otel]'" in line


def test_an_otlp_endpoint_alone_exports_over_otlp_as_the_protocol_variables_say() -> None:
    # Given an OTLP endpoint alone, and an OTLP protocol the SDK does not know
    result = traced(
        RECORD_A_SPAN, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_EXPORTER_OTLP_PROTOCOL="carrier-pigeon"
    )
    # Then OTLP was chosen (the protocol was read for it) and its refusal is one warning line, the run going on
    assert result.stdout.splitlines() == ["OtelSpans"]
    (line,) = result.stderr.splitlines()
    assert "tracing is off" in line and "Unsupported OTLP protocol 'carrier-pigeon'" in line


def test_the_setting_on_without_opentelemetry_installed_is_one_warning_saying_how_to_install_it() -> None:
    # Given an interpreter where the opentelemetry package cannot be imported (as when it is not installed)
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from stepwise.telemetry.spans import spans_for\n"
        "spans_for(True)\nprint(type(spans_for(True)).__name__)"
    )
    # When the spans are asked for with the setting on, twice
    result = traced(code)
    # Then the spans are off, and one warning line says what is missing and how to add it
    assert result.stdout.splitlines() == ["NoSpans"]
    (line,) = result.stderr.splitlines()
    assert "tracing is off" in line and "pip install 'stepwise[otel]'" in line and "ADOT" in line
