"""A local environment on the embedded store leaves nothing behind in the process when it ends."""

from __future__ import annotations

import sys

import boto3

from stepwise.local.embedded_dynamodb import EmbeddedDynamoDB
from stepwise.local.environment import LocalEnvironment
from tests.conftest import PROJECT_ROOT


def test_an_ended_environment_leaves_neither_its_table_nor_its_handler_modules_in_the_process() -> None:
    # Given an environment on the embedded (in-memory) store that has stored a run and invoked a handler
    with LocalEnvironment(config_dir=PROJECT_ROOT / "config", config_file="demo.yaml") as environment:
        run = environment.create_run("What is 2 + 2?")
        environment.invoke("IterationGuardFunction", {"run_id": run.run_id, "iteration": 0})
        table, prefix = environment.table_name, environment.invoker.module_prefix
        assert [name for name in sys.modules if name.startswith(prefix)]

    # When a later embedded store of the same process lists its tables
    with EmbeddedDynamoDB() as later:
        client = boto3.client("dynamodb", endpoint_url=later.endpoint_url, region_name="us-east-1")
        tables = client.list_tables()["TableNames"]

    # Then the ended environment's table and its handler modules are gone
    assert table not in tables
    assert not [name for name in sys.modules if name.startswith(prefix)]
