"""Per-iteration cost of the loop itself, through the local engine with a zero-latency scripted model.

Prints three tables: orchestration overhead (wall time minus model and tool time), DynamoDB calls and
bytes written, and the state payload size leaving each state. Sizes: runs of 1, 10 and 40 iterations.
"""

from __future__ import annotations

import statistics

from bench.harness import RunFigures, bench_for, percentile

SIZES = (1, 10, 40, 100)
RUNS = {1: 10, 10: 5, 40: 3, 100: 1}
MODEL_CALL_MS = 500


def measure() -> dict[int, list[RunFigures]]:
    """The figures of every measured run, by iterations per run."""
    results: dict[int, list[RunFigures]] = {}
    for iterations in SIZES:
        with bench_for(iterations) as bench:
            results[iterations] = [bench.run() for _ in range(RUNS[iterations])]
    return results


def print_tables(results: dict[int, list[RunFigures]]) -> None:
    """Print the overhead, DynamoDB and payload tables."""
    print(
        "Orchestration overhead per iteration (local engine, zero-latency scripted model, one tool call per iteration)"
    )
    print(
        f"| iterations/run | runs | median ms | p95 ms | % of a {MODEL_CALL_MS} ms model call "
        "| of which DynamoDB ms | median ms without DynamoDB |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for iterations, runs in results.items():
        overheads = [run.overhead_per_iteration_ms for run in runs]
        median = statistics.median(overheads)
        store_ms = statistics.median(run.dynamodb_ms / run.iterations for run in runs)
        without_store = statistics.median(run.overhead_without_store_ms for run in runs)
        print(
            f"| {iterations} | {len(runs)} | {median:.1f} | {percentile(overheads, 0.95):.1f} | "
            f"{100 * median / MODEL_CALL_MS:.1f}% | {store_ms:.1f} | {without_store:.1f} |"
        )
    print()
    print(
        "DynamoDB requests and bytes (request bodies of writes, response bodies of reads), per run and per "
        "iteration; a run of n iterations makes n - 1 tool calls, so the run's fixed part (creating it, Format) "
        "is shared by fewer iterations in short runs"
    )
    print(
        "| iterations/run | calls/run | calls/iteration | bytes written/run | bytes written/iteration "
        "| bytes read/run | bytes read/iteration |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for iterations, runs in results.items():
        calls = statistics.mean(run.dynamodb_calls for run in runs)
        written = statistics.mean(run.dynamodb_bytes_written for run in runs)
        read = statistics.mean(run.dynamodb_bytes_read for run in runs)
        print(
            f"| {iterations} | {calls:.0f} | {calls / iterations:.1f} | {written:.0f} | {written / iterations:.0f} "
            f"| {read:.0f} | {read / iterations:.0f} |"
        )
    print()
    print("DynamoDB requests per tool iteration, by operation (the 40-iteration run less the 10-iteration run, / 30)")
    long, short = results[40][-1], results[10][-1]
    operations = sorted(set(long.dynamodb_calls_by_operation) | set(short.dynamodb_calls_by_operation))
    print("| " + " | ".join(operations) + " | total |")
    print("|" + " ---: |" * (len(operations) + 1))
    per_operation = [
        (long.dynamodb_calls_by_operation.get(op, 0) - short.dynamodb_calls_by_operation.get(op, 0)) / 30
        for op in operations
    ]
    print("| " + " | ".join(f"{value:.2f}" for value in per_operation) + f" | {sum(per_operation):.2f} |")
    print()
    print("State payload size leaving each state, bytes (max over the run)")
    states = ["IterationGuard", "LLMCall", "Parse", "InvokeTool", "ToolInvoke", "Format"]
    print("| iterations/run | " + " | ".join(states) + " |")
    print("| ---: |" + " ---: |" * len(states))
    for iterations in (SIZES[0], SIZES[-1]):
        run = results[iterations][-1]
        cells = [str(max(run.payload_bytes[state])) if state in run.payload_bytes else "-" for state in states]
        print(f"| {iterations} | " + " | ".join(cells) + " |")


def main() -> dict[int, list[RunFigures]]:
    """Measure, print, and hand the figures to the benchmarks that build on them."""
    results = measure()
    print_tables(results)
    return results
