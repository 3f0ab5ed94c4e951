"""Import time of each function's handler module (a Lambda cold start's init), against a bare `import boto3`.

Each measurement is a fresh interpreter, so nothing is cached in-process; the environment is the one
the handler reads at import.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

from stepwise.local.defaults import LOCAL_ENVIRONMENT, PROJECT_ROOT

REPEATS = 5
_MEASURE = """
import importlib.util, sys, time
started = time.perf_counter()
{body}
print((time.perf_counter() - started) * 1000)
"""
_IMPORT_HANDLER = """
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
"""


def _time_ms(body: str, *args: str) -> float:
    environment = (
        os.environ
        | LOCAL_ENVIRONMENT
        | {
            "TABLE_NAME": "bench",
            "STEPWISE_CONFIG_DIR": str(PROJECT_ROOT / "config"),
            "STEPWISE_CONFIG_FILE": "demo.yaml",
        }
    )
    samples = []
    for _ in range(REPEATS):
        output = subprocess.run(
            [sys.executable, "-c", _MEASURE.format(body=body), *args],
            capture_output=True,
            text=True,
            check=True,
            env=environment,
        )
        samples.append(float(output.stdout.strip().splitlines()[-1]))
    return statistics.median(samples)


def main() -> None:
    """Print the table."""
    baseline = _time_ms("import boto3")
    print(f"Handler module import time, median of {REPEATS} fresh interpreters")
    print("| module | import ms | vs bare `import boto3` |")
    print("| --- | ---: | ---: |")
    print(f"| `import boto3` | {baseline:.0f} | 1.0x |")
    for handler in sorted(Path(PROJECT_ROOT, "functions").glob("*/app.py")):
        elapsed = _time_ms(_IMPORT_HANDLER, str(handler))
        print(f"| functions/{handler.parent.name}/app.py | {elapsed:.0f} | {elapsed / baseline:.1f}x |")
