"""The DynamoDB client of the steps, shared locally by every execution thread of the engine."""

from __future__ import annotations

from stepwise.config.settings import Settings
from stepwise.local.stepfunctions_endpoint import DEFAULT_MAX_CONCURRENT_EXECUTIONS
from stepwise.steps.runtime import dynamodb_client

BENCH_EXECUTION_SLOTS = 32  # the execution slots `make bench` gives the local engine
BOTOCORE_DEFAULT_POOL = 10


def test_the_client_keeps_a_connection_for_every_execution_slot() -> None:
    # Given the steps' DynamoDB client (locally, one handler instance serves every execution thread)
    client = dynamodb_client(Settings(table_name="runs", dynamodb_endpoint_url="http://127.0.0.1:8000"))

    # When its connection pool is read
    pool = client.meta.config.max_pool_connections

    # Then it holds more than botocore's default of 10, and at least one connection per execution slot of
    # `stepwise serve` and of the benchmark, so no concurrent request opens a connection only to drop it
    assert pool > BOTOCORE_DEFAULT_POOL
    assert pool >= max(BENCH_EXECUTION_SLOTS, DEFAULT_MAX_CONCURRENT_EXECUTIONS)
