"""The `stepwise` command run in a child process, as a user types it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.conftest import PROJECT_ROOT


def stepwise_run_json(
    question: str, config_dir: Path, *, dynamodb_endpoint: str, table_name: str, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """`stepwise run QUESTION --json` with the configuration in `config_dir`, its runs stored in `table_name`."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "stepwise.cli", "run", question, "--json"),
            *("--config", str(config_dir / "stepwise.yaml")),
            *("--dynamodb-endpoint", dynamodb_endpoint, "--table-name", table_name),
        ],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=120,
        env=dict(env),
    )
