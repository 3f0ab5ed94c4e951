"""What 1,000 runs cost on AWS, from counts measured in the local engine and the prices written below.

The counts (state transitions, Lambda invocations, DynamoDB requests and bytes) come from a measured
run; the durations that AWS bills but this machine cannot measure (the model's and the tools' latency,
DynamoDB's round trip) are stated assumptions. Prices: us-east-1, on-demand, as published by AWS in 2025.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.harness import RunFigures, bench_for

# Prices, USD (us-east-1, 2025 public price lists)
STANDARD_PER_TRANSITION = 0.025 / 1000
EXPRESS_PER_REQUEST = 1.00 / 1_000_000
EXPRESS_PER_GB_SECOND = 0.00001667
EXPRESS_BILLED_GB = 64 / 1024  # the minimum, for payloads this small
LAMBDA_ARM_PER_GB_SECOND = 0.0000133334
LAMBDA_PER_REQUEST = 0.20 / 1_000_000
DYNAMODB_PER_WRITE_UNIT = 0.625 / 1_000_000
DYNAMODB_PER_READ_UNIT = 0.125 / 1_000_000

# Assumptions about what this machine cannot measure
LAMBDA_MEMORY_GB = 0.5
MODEL_LATENCY_MS = 1500
TOOL_LATENCY_MS = 300
DYNAMODB_ROUND_TRIP_MS = 8
ITERATIONS = 3
# Share of invocations that meet a cold container: a guess for a service at a few runs a minute, where
# each of the six functions keeps a warm container or two; Lambda bills the init phase it measures.
COLD_START_RATE = 0.10

READ_OPERATIONS = ("GetItem", "Query", "BatchGetItem")


@dataclass
class RunCost:
    """Dollars per 1,000 runs, by service."""

    step_functions_standard: float
    step_functions_express: float
    lambda_compute: float
    lambda_cold_starts: float
    dynamodb: float


def cost_per_thousand(run: RunFigures, compute_ms_per_invocation: float, init_ms: float) -> RunCost:
    """Price 1,000 runs shaped like `run`."""
    model_calls = ITERATIONS
    tool_calls = ITERATIONS - 1
    dynamodb_wait_ms = run.dynamodb_calls * DYNAMODB_ROUND_TRIP_MS
    billed_ms = (
        run.lambda_invocations * compute_ms_per_invocation
        + dynamodb_wait_ms
        + model_calls * MODEL_LATENCY_MS
        + tool_calls * TOOL_LATENCY_MS
    )
    lambda_cost = billed_ms / 1000 * LAMBDA_MEMORY_GB * LAMBDA_ARM_PER_GB_SECOND + run.lambda_invocations * (
        LAMBDA_PER_REQUEST
    )
    writes = sum(count for op, count in run.dynamodb_calls_by_operation.items() if op not in READ_OPERATIONS)
    reads = run.dynamodb_calls - writes
    write_units = max(writes, math.ceil(run.dynamodb_bytes_written / 1024))
    read_units = max(reads, math.ceil(run.dynamodb_bytes_read / 4096))
    dynamodb_cost = write_units * DYNAMODB_PER_WRITE_UNIT + read_units * DYNAMODB_PER_READ_UNIT
    cold_start_ms = run.lambda_invocations * COLD_START_RATE * init_ms
    cold_start_cost = cold_start_ms / 1000 * LAMBDA_MEMORY_GB * LAMBDA_ARM_PER_GB_SECOND
    express_seconds = billed_ms / 1000
    return RunCost(
        step_functions_standard=1000 * run.state_transitions * STANDARD_PER_TRANSITION,
        step_functions_express=1000
        * (EXPRESS_PER_REQUEST + express_seconds * EXPRESS_BILLED_GB * EXPRESS_PER_GB_SECOND),
        lambda_compute=1000 * lambda_cost,
        lambda_cold_starts=1000 * cold_start_cost,
        dynamodb=1000 * dynamodb_cost,
    )


def main(init_ms_by_function: dict[str, float]) -> None:
    """Measure a typical run and print its price per 1,000 runs; cold starts priced at the measured init."""
    with bench_for(ITERATIONS) as bench:
        run = bench.run()
    compute_ms = max(run.overhead_without_store_ms * run.iterations / max(run.lambda_invocations, 1), 1.0)
    # the run's invocations are the loop's functions; the API and its authorizer are priced per request elsewhere
    loop = [ms for name, ms in init_ms_by_function.items() if not name.lower().startswith(("api", "authorizer"))]
    init_ms = sum(loop) / max(len(loop), 1)
    cost = cost_per_thousand(run, compute_ms, init_ms)
    print(f"AWS cost per 1,000 runs of {ITERATIONS} iterations ({ITERATIONS - 1} tool calls), us-east-1 on-demand")
    print(
        f"measured per run: {run.state_transitions} state transitions, {run.lambda_invocations} Lambda invocations, "
        f"{run.dynamodb_calls} DynamoDB requests, {run.dynamodb_bytes_written} B written, "
        f"{run.dynamodb_bytes_read} B read"
    )
    print(
        f"assumed: model {MODEL_LATENCY_MS} ms/call, tool {TOOL_LATENCY_MS} ms/call, DynamoDB {DYNAMODB_ROUND_TRIP_MS} "
        f"ms/request, Lambda {LAMBDA_MEMORY_GB * 1024:.0f} MB arm64, handler compute {compute_ms:.1f} ms/invocation, "
        f"{COLD_START_RATE:.0%} of invocations cold at {init_ms:.0f} ms init (measured, mean of the loop's handlers)"
    )
    print("| service | Standard workflow | Express workflow |")
    print("| --- | ---: | ---: |")
    print(f"| Step Functions | ${cost.step_functions_standard:.4f} | ${cost.step_functions_express:.4f} |")
    print(f"| Lambda (requests + GB-s) | ${cost.lambda_compute:.4f} | ${cost.lambda_compute:.4f} |")
    print(f"| Lambda cold-start init (GB-s) | ${cost.lambda_cold_starts:.4f} | ${cost.lambda_cold_starts:.4f} |")
    print(f"| DynamoDB (on-demand units) | ${cost.dynamodb:.4f} | ${cost.dynamodb:.4f} |")
    standard = cost.step_functions_standard + cost.lambda_compute + cost.lambda_cold_starts + cost.dynamodb
    express = cost.step_functions_express + cost.lambda_compute + cost.lambda_cold_starts + cost.dynamodb
    print(f"| **total** | **${standard:.4f}** | **${express:.4f}** |")
    print(
        f"| cold-start share of the total | {cost.lambda_cold_starts / standard:.1%} "
        f"| {cost.lambda_cold_starts / express:.1%} |"
    )
    print(
        "prices: Standard $0.025/1k transitions; Express $1.00/M requests + $0.00001667/GB-s (64 MB); "
        "Lambda arm64 $0.0000133334/GB-s + $0.20/M requests; DynamoDB $0.625/M write units, $0.125/M read units. "
        "Model tokens are not included."
    )
