"""Start to first step: `stepwise run` on the scripted demo model, from the command's start to the first step
of its trace on stdout, with no store running (cold: the command starts DynamoDB Local) and with the store
a previous command left running (warm: it connects at once).

Each sample is a fresh `stepwise run` process, as a user types it; the demo's example tool API runs in this
process, so no network is needed. Wall time is what a user waits; CPU time (the command's own, read from
/proc when the first step is printed) does not move with other work on a shared machine.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from stepwise.local.defaults import DEMO_CONFIG, DEMO_QUESTION, PROJECT_ROOT
from stepwise.local.example_api import ExampleToolApi
from stepwise.local.shared_store import stop

WARM_SAMPLES = 5
TARGET_WARM_MS = 1500.0
_FIRST_STEP = "[1] "


@dataclass(frozen=True)
class Sample:
    """One command: wall and CPU milliseconds from its start to its first step, and wall to its exit."""

    first_step_ms: float
    first_step_cpu_ms: float
    exit_ms: float


def _cpu_ms(pid: int) -> float:
    """The process's user and system CPU so far, in ms (/proc/PID/stat fields 14 and 15); 0 without /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def run_once(data_dir: Path, api_url: str) -> Sample:
    """`stepwise run` on the demo's configuration in `data_dir`, timed to its first step and to its end."""
    command = [sys.executable, "-m", "stepwise.cli", "run", DEMO_QUESTION, "--config", str(DEMO_CONFIG)]
    command += ["--data-dir", str(data_dir), "--store-idle-timeout", "120"]
    environment = os.environ | {"STEPWISE_EXAMPLE_API_URL": api_url}
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=PROJECT_ROOT, env=environment
    )
    assert process.stdout is not None
    first_step_ms = cpu_ms = 0.0
    for line in process.stdout:
        if not first_step_ms and line.startswith(_FIRST_STEP):
            first_step_ms = (time.perf_counter() - started) * 1000
            cpu_ms = _cpu_ms(process.pid)
    if process.wait() != 0 or not first_step_ms:
        raise RuntimeError(f"`stepwise run` exited with {process.returncode} before or after its first step")
    return Sample(first_step_ms, cpu_ms, (time.perf_counter() - started) * 1000)


def measure() -> tuple[Sample, list[Sample]]:
    """One cold sample (no store running) and `WARM_SAMPLES` warm ones (the store the cold one left)."""
    with tempfile.TemporaryDirectory(prefix="stepwise-bench-") as folder, ExampleToolApi() as api:
        data_dir = Path(folder)
        try:
            cold = run_once(data_dir, api.url)
            warm = [run_once(data_dir, api.url) for _ in range(WARM_SAMPLES)]
        finally:
            stop(data_dir)
    return cold, warm


def main() -> None:
    """Print start-to-first-step, cold and warm (median of the warm samples)."""
    cold, warm = measure()
    print("Start to first step: `stepwise run` on the scripted demo model (config/demo.yaml)")
    print(f"{'store':<28}{'first step (wall)':>19}{'first step (CPU)':>18}{'exit (wall)':>13}")
    rows = [
        ("cold (starts DynamoDB Local)", cold),
        (
            f"warm (median of {len(warm)})",
            Sample(
                statistics.median(sample.first_step_ms for sample in warm),
                statistics.median(sample.first_step_cpu_ms for sample in warm),
                statistics.median(sample.exit_ms for sample in warm),
            ),
        ),
    ]
    for name, sample in rows:
        print(
            f"{name:<28}{sample.first_step_ms:>16.0f} ms{sample.first_step_cpu_ms:>15.0f} ms{sample.exit_ms:>10.0f} ms"
        )
    warm_ms = rows[1][1].first_step_ms
    verdict = "within" if warm_ms < TARGET_WARM_MS else "OVER"
    print(f"warm start to first step {warm_ms:.0f} ms: {verdict} the {TARGET_WARM_MS:.0f} ms target")


if __name__ == "__main__":
    main()
