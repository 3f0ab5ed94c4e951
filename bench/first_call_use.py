"""What of a handler's init its first invocation uses: `python -m bench.first_call_use [LogicalId ...]`.

A cold start imports the handler module, then runs one invocation. This imports each handler in a fresh
interpreter (the dev layout, config/stepwise.yaml: Bedrock, built-in tools) and runs one realistic first
invocation on its sample event (events/*.json) against a run stored as `stepwise invoke --seed-run` stores it:
moto's server for DynamoDB, and the Converse loopback of the tests for Bedrock. It records which of the
project's modules had any code run during that invocation (`sys.monitoring`, by code object's file) and which
pydantic models it used (built then, or referenced by the core schema of one built then). Modules imported at
init with neither are the candidates for loading on the path that needs them, weighed by their own import
time (`-X importtime` self time, the least of several fresh imports).

A module that only holds data (constants, compiled patterns, NamedTuples, exception classes, the models of a
schema built at import) runs no code of its own when used, so it counts as unused here although it may not be:
read the list as candidates, each to be checked. Not part of `make bench` (it starts a moto server).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from stepwise.local.defaults import LOCAL_ENVIRONMENT, PROJECT_ROOT
from tests.support.aws_loopback import AwsLoopback, converse_reply

IMPORT_REPEATS = 5
# events/*.json for each function measured by default (the API: a poll of the run)
EVENTS = {
    "LLMCallFunction": "llm_call.json",
    "ParseFunction": "parse.json",
    "FormatFunction": "format.json",
    "ApiFunction": "api_get_run.json",
    "ToolInvokeFunction": "tool_invoke.json",
    "CompactFunction": "compact.json",
}
_APP = {
    "LLMCallFunction": "llm_call",
    "ParseFunction": "parse",
    "FormatFunction": "format",
    "ApiFunction": "api",
    "ToolInvokeFunction": "tool_invoke",
    "CompactFunction": "compact",
}

# In the measured interpreter: import the handler, then one invocation with `sys.monitoring` on.
_PROBE = """
import importlib.util, json, sys
app_path, event_path = sys.argv[1:3]
before = set(sys.modules)
spec = importlib.util.spec_from_file_location("app", app_path)
app = importlib.util.module_from_spec(spec)
spec.loader.exec_module(app)
at_init = set(sys.modules) - before
from pydantic import BaseModel

def models():
    seen, pending = [], [BaseModel]
    while pending:
        for model in pending.pop().__subclasses__():
            if model not in seen:
                seen.append(model)
                pending.append(model)
    return seen

def built(model):
    return type(model.__dict__.get("__pydantic_validator__")).__name__ == "SchemaValidator"

def name(model):
    return f"{model.__module__}.{model.__qualname__}"

built_before = {name(model) for model in models() if built(model)}
ran = set()

def profiled(frame, event, arg):
    if event == "call":
        ran.add(frame.f_code.co_filename)

# sys.monitoring (3.12 and later) disables each code object once seen; sys.setprofile, before it, sees every call
monitoring = getattr(sys, "monitoring", None)
if monitoring is not None:
    monitoring.use_tool_id(3, "first_call_use")

    def started(code, offset):
        ran.add(code.co_filename)
        return monitoring.DISABLE

    monitoring.register_callback(3, monitoring.events.PY_START, started)
    monitoring.set_events(3, monitoring.events.PY_START)
else:
    import threading
    threading.setprofile(profiled)
    sys.setprofile(profiled)

class Context:
    function_name, memory_limit_in_mb, aws_request_id = "Fn", 512, "r1"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:Fn"

result = app.lambda_handler(json.load(open(event_path)), Context())
if monitoring is not None:
    monitoring.set_events(3, 0)
sys.setprofile(None)
used_models = set()

def referenced(schema):
    if isinstance(schema, dict):
        if isinstance(schema.get("cls"), type):
            used_models.add(name(schema["cls"]))
        for value in schema.values():
            referenced(value)
    elif isinstance(schema, list | tuple):
        for value in schema:
            referenced(value)

for model in models():
    if built(model) and name(model) not in built_before:
        used_models.add(name(model))
        referenced(model.__dict__.get("__pydantic_core_schema__"))
used = {
    module for module in at_init
    if getattr(sys.modules.get(module), "__file__", None) in ran
    or any(model.rpartition(".")[0] == module for model in used_models)
}
print(json.dumps({
    "result": str(result)[:60],
    "init": sorted(at_init),
    "used": sorted(used),
    "during_call": sorted(set(sys.modules) - before - at_init),
}))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for(port: int) -> None:
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"moto's server did not start on port {port}")


def _self_times(app: Path, environment: dict[str, str]) -> dict[str, int]:
    """Each module's own import time (microseconds), the least of `IMPORT_REPEATS` fresh imports of `app`."""
    body = (
        "import importlib.util, sys\nspec = importlib.util.spec_from_file_location('app', sys.argv[1])\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))"
    )
    least: dict[str, int] = {}
    for _ in range(IMPORT_REPEATS):
        command = [sys.executable, "-X", "importtime", "-c", body, str(app)]
        lines = subprocess.run(command, capture_output=True, text=True, check=True, env=environment).stderr
        for line in lines.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s+(.*)$", line)
            if match:
                module = match.group(2).strip()
                least[module] = min(least.get(module, 1 << 62), int(match.group(1)))
    return least


def _report(logical_id: str, probed: dict[str, Any], self_us: dict[str, int]) -> str:
    """Print the function's row; return the line naming its largest unused modules."""
    project = [module for module in probed["init"] if module.startswith("stepwise")]
    unused = [module for module in project if module not in probed["used"]]
    total = sum(self_us.get(module, 0) for module in project)
    left = sum(self_us.get(module, 0) for module in unused)
    everything = sum(self_us.values())
    print(
        f"| {logical_id} | {everything / 1000:.0f} | {total / 1000:.0f} ({len(project)}) | "
        f"{left / 1000:.1f} ({len(unused)}) | {left / max(total, 1):.0%} | {left / max(everything, 1):.1%} |"
    )
    largest = sorted(unused, key=lambda module: -self_us.get(module, 0))[:8]
    loaded = [module for module in probed["during_call"] if module.startswith("stepwise")]
    named = ", ".join(f"{module.removeprefix('stepwise.')} {self_us.get(module, 0) / 1000:.1f}" for module in largest)
    return f"{logical_id}: {len(loaded)} project modules loaded by the call; unused at init, largest (ms): {named}"


def main(logical_ids: list[str]) -> None:
    """Print, per function, its import's own time, the project's share, and what the first call left unused."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    endpoint = f"http://127.0.0.1:{port}"
    print("Import against first invocation: ms of own import time (least of 5), modules in brackets")
    print("| function | import ms | project's ms | unused by the first call | of project | of import |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    try:
        _wait_for(port)
        details = [_measure(logical_id, endpoint) for logical_id in logical_ids]
    finally:
        server.terminate()
        server.wait()
    print("\n".join(details))


def _measure(logical_id: str, endpoint: str) -> str:
    from stepwise.local.environment import LocalEnvironment
    from stepwise.local.event_seed import seed_for_event

    event_path = PROJECT_ROOT / "events" / EVENTS[logical_id]
    table = f"first-call-{logical_id.lower()}"
    with AwsLoopback() as aws:
        # the seeded iterations call the model, and then LLMCall's own: a call, another, an answer, then calls
        aws.enqueue_converse(
            converse_reply(
                tool_uses=[{"name": "calculator", "input": {"expression": "2 + 3"}, "toolUseId": "call_1_0"}]
            ),
            converse_reply(tool_uses=[{"name": "current_time", "input": {}}]),
            converse_reply(text="2 + 3 is 5."),
        )
        environment = os.environ | {
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": aws.url,
            "AWS_ACCESS_KEY_ID": "stepwise-bench",
            "AWS_SECRET_ACCESS_KEY": "stepwise-bench",
            "AWS_REGION": "us-east-1",
        }
        saved = dict(os.environ)
        os.environ.update(environment)
        try:
            with LocalEnvironment(
                config_dir=PROJECT_ROOT / "config", dynamodb_endpoint_url=endpoint, table_name=table
            ) as local:
                seed_for_event(logical_id, json.loads(event_path.read_text(encoding="utf-8")), local)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        measured = (
            environment
            | LOCAL_ENVIRONMENT
            | {
                "TABLE_NAME": table,
                "DYNAMODB_ENDPOINT_URL": endpoint,
                "STEPWISE_CONFIG_DIR": str(PROJECT_ROOT / "config"),
                "STEPWISE_CONFIG_FILE": "stepwise.yaml",
                "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:bench",
                "PYDANTIC_DISABLE_PLUGINS": "__all__",
            }
        )
        app = PROJECT_ROOT / "functions" / _APP[logical_id] / "app.py"
        command = [sys.executable, "-c", _PROBE, str(app), str(event_path)]
        output = subprocess.run(command, capture_output=True, text=True, check=True, env=measured).stdout
        probed = json.loads(output.strip().splitlines()[-1])
        return _report(logical_id, probed, _self_times(app, measured))


if __name__ == "__main__":
    main(sys.argv[1:] or list(EVENTS))
