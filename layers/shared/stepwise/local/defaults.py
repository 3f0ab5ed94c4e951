"""Environment of local runs; kept free of heavy imports so the CLI can apply it before loading anything."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# layers/shared/stepwise/local/defaults.py -> the repository (template.yaml, config/, statemachine/)
PROJECT_ROOT = Path(__file__).resolve().parents[4]

# The one table local runs use, so that a restart finds every run (`--table-name` changes it).
DEFAULT_TABLE_NAME = "stepwise-local"
# DynamoDB Local's data folder (`--data-dir` or STEPWISE_DATA_DIR change it); git-ignored.
DEFAULT_DATA_DIR = PROJECT_ROOT / ".stepwise" / "dynamodb"

# `stepwise demo`: its configuration (scripted model, example tools) and the question it asks by default.
DEMO_CONFIG = PROJECT_ROOT / "config" / "demo.yaml"
DEMO_QUESTION = "What's the weather in Paris today, and how much is 100 EUR in US dollars?"

# Local runs have no CloudWatch agent. The caller's AWS identity and region are left alone: Bedrock, SSM,
# Secrets Manager and S3 are called as the caller; only the local stand-ins of DynamoDB and Step Functions
# are signed with placeholder keys, by their own clients (Settings.emulated_service_arguments).
# `CALLER_SETTINGS` among them are defaults only: a value the caller set wins (`POWERTOOLS_METRICS_DISABLED=false
# stepwise run …` prints the run's EMF metrics, on stderr).
LOCAL_ENVIRONMENT = {
    "STEPWISE_LOCAL_ENDPOINTS": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_LOGGER_LOG_EVENT": "false",
    # botocore signs with awscrt when it is installed (the dev tools bring it); Lambda's runtime has no awscrt,
    # and botocore's own signer takes less CPU per request (docs/performance.md, "Where a burst's time goes").
    "BOTO_DISABLE_CRT": "true",
}
CALLER_SETTINGS = frozenset({"POWERTOOLS_METRICS_DISABLED", "POWERTOOLS_LOG_LEVEL"})


def local_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The local environment, with the caller's own values (in `environ`) of the `CALLER_SETTINGS`."""
    return {
        name: environ[name] if name in CALLER_SETTINGS and environ.get(name) else value
        for name, value in LOCAL_ENVIRONMENT.items()
    }


def apply_local_defaults() -> None:
    """Set the local defaults for anything the caller's environment does not already set.

    Powertools reads its settings when its Logger is created, at import, so this runs first.
    """
    for name, value in LOCAL_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
