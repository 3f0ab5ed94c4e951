"""A Lambda cold start's init: each function's handler module import, against the floor of a handler that
talks to DynamoDB (`import boto3` and one DynamoDB client), measured in the same run.

Two layouts. The dev layout is this virtualenv. The deployed layout is what `make build` puts in
.aws-sam/build: the handler's own folder and the shared layer's `python/` folder, run by a python3.13
interpreter (the functions' runtime) with nothing else on its path but a boto3 as the Lambda runtime
provides it. The build targets arm64, so the layer's compiled wheels (pydantic-core, ...) are installed
again for this machine at the same versions, in a cache beside the build; the layer's own code is the
build's. Each figure is the median of fresh interpreters (nothing is cached in-process), in CPU time of
the process, so that other work on a shared machine does not move it; the floor is measured between the
samples of each handler, and each ratio is the median of the handler's samples, each against the floor sample
taken just before it.

In the deployed layout no bytecode is written: Lambda's /var/task and /opt are read-only, so a module
without bytecode in the package is compiled at every cold start. `make build` compiles the build's bytecode
(checked-hash) so that it ships with the package; a build made by `sam build` alone has none, and the
deployed figures then include compiling every module of the project (the table says which). The dev
layout writes and reuses bytecode, as a virtualenv does.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from stepwise.local.defaults import LOCAL_ENVIRONMENT, PROJECT_ROOT

REPEATS = 7
TARGET_RATIO = 1.25
BUILD_DIR = PROJECT_ROOT / ".aws-sam" / "build"
HOST_LAYER_CACHE = PROJECT_ROOT / ".aws-sam" / "bench-host-layer"

_MEASURE = """
import importlib.util, sys, time
{path_setup}
started = time.process_time()
{body}
print((time.process_time() - started) * 1000)
"""
_FLOOR = "import boto3\nboto3.client('dynamodb', region_name='us-east-1')"
_IMPORT_HANDLER = """
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
"""


def _environment(deployed: bool) -> dict[str, str]:
    caller = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return (
        caller
        | LOCAL_ENVIRONMENT
        | {
            "AWS_REGION": "us-east-1",
            "TABLE_NAME": "bench",
            "STEPWISE_CONFIG_DIR": str(PROJECT_ROOT / "config"),
            "STEPWISE_CONFIG_FILE": "stepwise.yaml",
            # as the template deploys it: no pydantic plugins scanned at cold start (tracing off by default)
            "PYDANTIC_DISABLE_PLUGINS": "__all__",
        }
        # as on Lambda, whatever the caller's environment says
        | ({"PYTHONDONTWRITEBYTECODE": "1"} if deployed else {})
    )


def _time_ms(interpreter: str, body: str, *args: str, path: list[str] | None = None) -> float:
    # `-S` and an explicit sys.path for the deployed layout: no site-packages, as in the Lambda runtime
    path_setup = f"sys.path[:0] = {path!r}" if path is not None else ""
    command = [
        interpreter,
        *(["-S"] if path is not None else []),
        "-c",
        _MEASURE.format(path_setup=path_setup, body=body),
    ]
    output = subprocess.run(
        [*command, *args], capture_output=True, text=True, check=True, env=_environment(path is not None)
    )
    return float(output.stdout.strip().splitlines()[-1])


def _print_layout(
    title: str, interpreter: str, handlers: list[Path], path_for: dict[Path, list[str]] | None
) -> dict[str, float]:
    print(f"{title}: handler module import, CPU ms, median of {REPEATS} fresh interpreters")
    print("| module | init ms | floor ms | vs floor (median of paired ratios) |")
    print("| --- | ---: | ---: | ---: |")
    inits: dict[str, float] = {}
    for handler in handlers:
        path = None if path_for is None else path_for[handler]
        floors, samples = [], []
        for _ in range(REPEATS):
            floors.append(_time_ms(interpreter, _FLOOR, path=path))
            samples.append(_time_ms(interpreter, _IMPORT_HANDLER, str(handler), path=path))
        elapsed, floor = statistics.median(samples), statistics.median(floors)
        # each sample against the floor taken just before it: the machine's speed drifts between pairs (a
        # shared VM's floor moved 60% within one run) more than within one
        ratio = statistics.median(sample / before for sample, before in zip(samples, floors, strict=True))
        mark = "" if ratio <= TARGET_RATIO else f" (over {TARGET_RATIO}x)"
        print(f"| {handler.parent.name}/app.py | {elapsed:.0f} | {floor:.0f} | {ratio:.2f}x{mark} |")
        inits[handler.parent.name] = elapsed
    print("floor: `import boto3` and one DynamoDB client, the least a handler that talks to DynamoDB does")
    return inits


# Parse has the models loaded already; then the policy's modules and cedarpy are imported, docs/payments.cedar
# parsed, one call decided (a transfer it sends for approval), and more calls decided warm.
_POLICY_PROBE = """
import sys, time
import stepwise.models.policy, stepwise.models.run
clock = time.process_time
started = clock()
import cedarpy
imported = clock()
from stepwise.governance.tool_policy import CallFacts, ToolPolicy
policy = ToolPolicy(sys.argv[1], "enforce")
facts = CallFacts("alice", "transfer", {"amount": 500, "to": "acct-1"}, "payments", 1, 1200, 0.0123)
schema = {"type": "object", "properties": {"amount": {"type": "integer"}, "to": {"type": "string"}}}
assert policy.decide(facts, schema).effect == "approval"
first = clock()
for _ in range(CALLS):
    policy.decide(facts, schema)
warm = clock()
print((imported - started) * 1000, (first - started) * 1000, (warm - first) * 1000 / CALLS)
"""
_POLICY_CALLS = 1000
EXAMPLE_POLICY = PROJECT_ROOT / "docs" / "payments.cedar"


def _print_policy_cost(interpreter: str) -> None:
    """What a tool policy adds, paid only by the first step of a container that meets a profile with one
    (Parse, which decides the calls); no handler's import loads Cedar."""
    text = EXAMPLE_POLICY.read_text(encoding="utf-8")
    floors: list[float] = []
    samples: list[list[float]] = []
    probe = _POLICY_PROBE.replace("CALLS", str(_POLICY_CALLS))
    for _ in range(REPEATS):
        floors.append(_time_ms(interpreter, _FLOOR))
        output = subprocess.run(
            [interpreter, "-c", probe, text], capture_output=True, text=True, check=True, env=_environment(False)
        )
        samples.append([float(part) for part in output.stdout.split()])
    floor = statistics.median(floors)
    imports, first_uses, warm = (statistics.median(column) for column in zip(*samples, strict=True))
    print(f"Tool policy (Cedar through cedarpy), CPU ms, median of {REPEATS} fresh interpreters")
    print("| what | ms | vs floor |")
    print("| --- | ---: | ---: |")
    print(f"| `import cedarpy` | {imports:.1f} | {imports / floor:.2f}x |")
    print(
        f"| first use: that import, parse docs/payments.cedar, decide one call | {first_uses:.1f} "
        f"| {first_uses / floor:.2f}x |"
    )
    print(f"| each further call decided (mean of {_POLICY_CALLS}) | {warm:.3f} | |")
    print(f"floor: {floor:.0f} ms; a profile without a policy never imports cedarpy")


def _python313() -> str | None:
    # pyenv's versions first: its `python3.13` shim fails unless 3.13 is a selected version
    candidates = sorted(Path.home().glob(".pyenv/versions/3.13*/bin/python3.13"))
    return str(candidates[-1]) if candidates else shutil.which("python3.13")


def _host_layer(interpreter: str) -> Path:
    """The built layer's packages at the same versions, for this machine, and a runtime-like boto3."""
    layer = BUILD_DIR / "SharedLayer" / "python"
    pins = sorted("==".join(meta.name.removesuffix(".dist-info").split("-")[:2]) for meta in layer.glob("*.dist-info"))
    stamp = HOST_LAYER_CACHE / "pins.txt"
    if not stamp.exists() or stamp.read_text(encoding="utf-8") != "\n".join(pins):
        shutil.rmtree(HOST_LAYER_CACHE, ignore_errors=True)
        # the layer's pins without their dependencies (the layer has them); boto3 with its own, as the runtime has it
        subprocess.run(
            [
                interpreter,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--target",
                str(HOST_LAYER_CACHE / "layer"),
                *pins,
            ],
            check=True,
        )
        for target, requirements in (("runtime", ["boto3"]),):
            target_dir = str(HOST_LAYER_CACHE / target)
            subprocess.run(
                [interpreter, "-m", "pip", "install", "-q", "--target", target_dir, *requirements], check=True
            )
        stamp.write_text("\n".join(pins), encoding="utf-8")
    return HOST_LAYER_CACHE


def main() -> dict[str, float]:
    """Print the init ratios of both layouts; the init ms by function, of the deployed layout if built."""
    dev_handlers = sorted(Path(PROJECT_ROOT, "functions").glob("*/app.py"))
    inits = _print_layout("Dev layout (this virtualenv)", sys.executable, dev_handlers, None)
    print()
    _print_policy_cost(sys.executable)
    print()
    interpreter = _python313()
    if not (BUILD_DIR / "SharedLayer" / "python").is_dir() or interpreter is None:
        print("Deployed layout: no .aws-sam/build or no python3.13; run `make build` first")
        return inits
    cache = _host_layer(interpreter)
    layer = BUILD_DIR / "SharedLayer" / "python"
    built = sorted(path for path in BUILD_DIR.glob("*Function/app.py"))
    compiled = any((layer / "stepwise" / "__pycache__").glob("*.pyc"))
    bytecode = "with the bytecode `make build` compiles" if compiled else "no bytecode: built without `make build`"
    # the host-arch wheels first, then the built layer (our code and pure-Python packages), then the runtime's boto3
    path_for = {
        handler: [str(handler.parent), str(cache / "layer"), str(layer), str(cache / "runtime")] for handler in built
    }
    title = f"Deployed layout (.aws-sam/build, {Path(interpreter).name}, {bytecode})"
    return _print_layout(title, interpreter, built, path_for)
