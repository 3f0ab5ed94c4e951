"""DynamoDB faults: a proxy on loopback that throttles and drops connections, and conditional-check races.

The handlers' SDK is held to 3 attempts per call (`AWS_MAX_ATTEMPTS`; the SDK's default for DynamoDB is
10, with up to 25 s of backoff), so a burst of 3 faults gets past it quickly. A fault the SDK retries away
is invisible to the state machine; a burst it cannot absorb must become `StoreTransientError`, which the
state machine retries. A connection dropped after the table applied a write makes the SDK send the write
again: the store must see its own first attempt there and neither fail nor write twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from stepwise.local.environment import LocalEnvironment
from tests.e2e.conftest import RecordingListener, get_tool, http_api, react_action, react_answer, scripted_model
from tests.faults.conftest import EnvironmentStarter
from tests.faults.dynamodb_proxy import Combined, EveryNth, Fault, FaultSchedule, FaultyDynamoDBProxy
from tests.faults.harness import RUNS_PER_SCENARIO, armed, ask_and_judge, settle, write_config
from tests.faults.lambda_faults import DuplicateDeliveryInvoker
from tests.faults.outcomes import ExpectedRun, RunVerdict, observation, question, reply
from tests.support.tool_server import Hang, ScriptableToolServer

QUESTION = "How many parcels are in the depot?"
ACTION = react_action("count_parcels", {"depot": "north"})
ANSWER = "There are 17 parcels."
SDK_ATTEMPTS = 3
EXPECTED = ExpectedRun(
    conversation=(
        question(QUESTION),
        reply(1, ACTION["content"]),
        observation(1, '"parcels":17'),
        reply(2, react_answer(ANSWER)["content"]),
    ),
    answer=ANSWER,
)

ABSORBED_BY_THE_SDK: dict[str, FaultSchedule] = {
    "DynamoDB: 1 request in 5 throttled (SDK retries)": EveryNth(period=5, fault=Fault.THROTTLE),
    "DynamoDB: 1 connection in 6 dropped before the request (SDK retries)": EveryNth(period=6, fault=Fault.DROP_BEFORE),
    "DynamoDB: 1 connection in 6 dropped after the write (SDK retries)": EveryNth(
        period=6, fault=Fault.DROP_AFTER, offset=3
    ),
}
PAST_THE_SDK: dict[str, FaultSchedule] = {
    "DynamoDB: throttled in bursts of 3 (state machine retries)": EveryNth(
        period=12, fault=Fault.THROTTLE, burst=SDK_ATTEMPTS
    ),
    "DynamoDB: connections dropped in bursts of 3 (state machine retries)": Combined(
        (
            # A run of this scenario makes 13 requests, more with the retries: the first burst takes the
            # second Parse's put (requests 10-12), the second the Query of Format after its retry (15-17).
            EveryNth(period=10, fault=Fault.DROP_BEFORE, burst=SDK_ATTEMPTS),
            EveryNth(period=10, fault=Fault.DROP_AFTER, burst=SDK_ATTEMPTS, offset=5),
        )
    ),
}


def parcels_config(config_dir: Path, tools: ScriptableToolServer) -> Path:
    """A model that counts the parcels with the tool, then answers."""
    tool = get_tool("count_parcels", "/parcels", depot="string")
    return write_config(config_dir, scripted_model(ACTION, react_answer(ANSWER)), apis=[http_api(tools.url, tool)])


def state_machine_retries(listener: RecordingListener, *, at_least: int, at_most: int) -> Callable[[], list[str]]:
    """A check that the StoreTransientError retries by the state machine since now are within bounds."""
    seen = sum(1 for event in listener.events if event.type == "retry")

    def check() -> list[str]:
        nonlocal seen
        retries = [event for event in listener.events if event.type == "retry"]
        new, seen = retries[seen:], len(retries)
        store_retries = sum(1 for event in new if event.error == "StoreTransientError")
        others = sorted({f"{event.state}: {event.error}" for event in new if event.error != "StoreTransientError"})
        problems = [f"state machine retried {others}"] if others else []
        if not at_least <= store_retries <= at_most:
            problems.append(f"{store_retries} StoreTransientError retries, expected {at_least} to {at_most}")
        return problems

    return check


def ask_under_faults(
    environment: LocalEnvironment,
    listener: RecordingListener,
    proxy: FaultyDynamoDBProxy,
    schedule: FaultSchedule,
    *,
    retries: tuple[int, int],
) -> list[RunVerdict]:
    """Ask the scenario's runs with `schedule` armed, each judged with its state-machine retries in `retries`."""
    verdicts = []
    for _ in range(RUNS_PER_SCENARIO):
        check = state_machine_retries(listener, at_least=retries[0], at_most=retries[1])
        verdicts.append(
            ask_and_judge(environment, QUESTION, EXPECTED, during=lambda: armed(proxy, schedule), also=check)
        )
    return verdicts


@pytest.mark.parametrize("scenario", list(ABSORBED_BY_THE_SDK))
def test_faults_the_sdk_retries_away_never_reach_the_state_machine(
    scenario: str,
    proxy: FaultyDynamoDBProxy,
    parcels_api: ScriptableToolServer,
    config_dir: Path,
    start_environment: EnvironmentStarter,
    request: pytest.FixtureRequest,
) -> None:
    # Given the store behind a proxy that faults isolated requests
    environment, listener = start_environment(
        parcels_config(config_dir, parcels_api),
        dynamodb_endpoint_url=proxy.url,
        extra_environment={"AWS_MAX_ATTEMPTS": str(SDK_ATTEMPTS)},
    )
    # When questions are asked while the faults are injected
    verdicts = ask_under_faults(environment, listener, proxy, ABSORBED_BY_THE_SDK[scenario], retries=(0, 0))
    # Then every run succeeded whole, without a single retry by the state machine
    assert proxy.injected() >= RUNS_PER_SCENARIO
    settle(request.node, scenario, verdicts)


@pytest.mark.parametrize("scenario", list(PAST_THE_SDK))
def test_fault_bursts_past_the_sdk_are_retried_by_the_state_machine(
    scenario: str,
    proxy: FaultyDynamoDBProxy,
    parcels_api: ScriptableToolServer,
    config_dir: Path,
    start_environment: EnvironmentStarter,
    request: pytest.FixtureRequest,
) -> None:
    # Given the store behind a proxy that faults bursts of as many requests as the SDK attempts
    environment, listener = start_environment(
        parcels_config(config_dir, parcels_api),
        dynamodb_endpoint_url=proxy.url,
        extra_environment={"AWS_MAX_ATTEMPTS": str(SDK_ATTEMPTS)},
    )
    # When questions are asked while the faults are injected
    verdicts = ask_under_faults(environment, listener, proxy, PAST_THE_SDK[scenario], retries=(1, 10))
    # Then every run succeeded whole, the state machine having retried StoreTransientError
    settle(request.node, scenario, verdicts)


@pytest.mark.parametrize(
    ("scenario", "functions"),
    [
        ("DynamoDB: conditional-check race, ToolInvoke delivered twice at once", {"ToolInvokeFunction"}),
        (
            "DynamoDB: conditional-check race, every step delivered twice at once",
            {"IterationGuardFunction", "LLMCallFunction", "ParseFunction", "ToolInvokeFunction", "FormatFunction"},
        ),
    ],
)
def test_a_step_delivered_twice_at_once_stores_its_result_once(
    scenario: str,
    functions: set[str],
    config_dir: Path,
    start_environment: EnvironmentStarter,
    request: pytest.FixtureRequest,
) -> None:
    # Given a tool slow enough that both deliveries read the store before either writes, and an
    # engine that delivers each invocation of the chosen steps twice at the same moment
    with ScriptableToolServer(default=Hang(0.2)) as tools:
        environment, _ = start_environment(parcels_config(config_dir, tools))
        duplicating = DuplicateDeliveryInvoker(environment.invoker, functions=frozenset(functions))
        environment.invoker = duplicating
        expected = ExpectedRun(
            conversation=(
                question(QUESTION),
                reply(1, ACTION["content"]),
                observation(1, '{"late":true}'),
                reply(2, react_answer(ANSWER)["content"]),
            ),
            answer=ANSWER,
        )
        # When questions are asked
        verdicts = [ask_and_judge(environment, QUESTION, expected) for _ in range(RUNS_PER_SCENARIO)]
    # Then every run succeeded with each message and each trace step stored once
    assert duplicating.deliveries >= RUNS_PER_SCENARIO
    settle(request.node, scenario, verdicts)


class FaultedUntilEntered:
    """Every request faulted until the execution enters `state` (as the listener sees it), then none."""

    def __init__(self, listener: RecordingListener, state: str, fault: Fault) -> None:
        self.listener = listener
        self.state = state
        self.fault = fault
        self.entered_before = listener.entered().count(state)

    def __call__(self, number: int) -> Fault:
        """`fault` until the state is entered once more than when the schedule was made."""
        return Fault.FORWARD if self.listener.entered().count(self.state) > self.entered_before else self.fault


def test_an_outage_through_format_failures_retries_is_recorded_from_the_execution_end(
    proxy: FaultyDynamoDBProxy,
    parcels_api: ScriptableToolServer,
    config_dir: Path,
    start_environment: EnvironmentStarter,
    request: pytest.FixtureRequest,
) -> None:
    # Given a store throttled from the run's first step until its execution reaches the Fail state, past
    # every retry of the steps and of FormatFailure (the SDK held to one attempt, so that is quick)
    scenario = "DynamoDB: outage through FormatFailure's retries (recorded at the execution's end)"
    environment, listener = start_environment(
        parcels_config(config_dir, parcels_api),
        dynamodb_endpoint_url=proxy.url,
        extra_environment={"AWS_MAX_ATTEMPTS": "1"},
    )
    expected = ExpectedRun(
        conversation=(question(QUESTION),), status="FAILED", stop_reason="error", error_type="StoreTransientError"
    )
    # When questions are asked
    verdicts = [
        ask_and_judge(
            environment,
            QUESTION,
            expected,
            during=lambda: armed(proxy, FaultedUntilEntered(listener, "Failed", Fault.THROTTLE)),
        )
        for _ in range(RUNS_PER_SCENARIO)
    ]
    # Then FormatFailure could record none of them, and each run is FAILED with the error its execution
    # ended with, recorded by the execution-ended rule
    assert listener.entered().count("Failed") == RUNS_PER_SCENARIO
    caught = [event for event in listener.events if event.state == "FormatFailure" and event.type == "caught"]
    assert len(caught) == RUNS_PER_SCENARIO
    settle(request.node, scenario, verdicts)
