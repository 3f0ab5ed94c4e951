"""Static checks of what gets deployed: IAM scoping in template.yaml, error handling in the state machine.

Read from the files as they are, before any deploy: `template.yaml` through the project's own SAM
template reader (short-form tags in their long form) and `statemachine/agent.asl.json` as JSON, with
its `${...}` substitutions left as text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stepwise.errors import LLMTransientError
from stepwise.local.template import SamTemplate
from stepwise.models.state import FormatResult, StatePayload
from tests.conftest import PROJECT_ROOT
from tests.support.cfn_render import LOG_DELIVERY_ACTIONS, rendered_definition

LAMBDA_SERVICE_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}
FAILURE_RECORDER = "FormatFailure"
# The online evals run after the run's end is recorded, so their failure goes where their path goes, never
# to the failure recorder: an eval must not change how the run or its execution ended.
AFTER_THE_END = {"OnlineEval": "Done", "OnlineEvalAfterFailure": "Failed"}


@pytest.fixture(scope="module")
def template() -> SamTemplate:
    return SamTemplate.load(PROJECT_ROOT / "template.yaml")


@pytest.fixture(scope="module")
def definition(template: SamTemplate) -> dict[str, Any]:
    loaded = rendered_definition(template)
    return loaded


def iam_statements(value: Any) -> Iterator[dict[str, Any]]:
    """Every identity-policy statement (an `Effect` with actions, no `Principal`) found in `value`."""
    if isinstance(value, list):
        for item in value:
            yield from iam_statements(item)
    elif isinstance(value, dict):
        if "Effect" in value and ("Action" in value or "NotAction" in value) and "Principal" not in value:
            yield value
        else:
            for item in value.values():
                yield from iam_statements(item)


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def grants_any_resource(statement: dict[str, Any]) -> bool:
    """True when the statement is not limited to named resources (`*` anywhere, or NotResource)."""
    if "NotResource" in statement:
        return True
    return any(isinstance(resource, str) and "*" in resource for resource in as_list(statement.get("Resource", "*")))


def task_states(states: dict[str, Any], enclosing_map: dict[str, Any] | None = None) -> Iterator[tuple[str, Any, Any]]:
    """(name, Task state, the Map state around it or None) for every Task, Map items included."""
    for name, state in states.items():
        if state["Type"] == "Task":
            yield name, state, enclosing_map
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if processor:
            yield from task_states(processor["States"], state)
        for branch in state.get("Branches", []):
            yield from task_states(branch["States"], enclosing_map)


def test_the_only_iam_statement_on_any_resource_is_the_state_machine_log_delivery(template: SamTemplate) -> None:
    # Given every IAM statement of every resource in template.yaml
    # When those that grant on "*" (or on NotResource) are collected, with their resource
    wildcards = [
        (logical_id, sorted(as_list(statement.get("Action", []))))
        for logical_id, resource in template.document["Resources"].items()
        for statement in iam_statements(resource.get("Properties", {}))
        if grants_any_resource(statement)
    ]
    # Then only the state machine's CloudWatch Logs delivery statement does, with only those actions
    assert wildcards == [("AgentStateMachine", LOG_DELIVERY_ACTIONS)]


def test_sam_policy_templates_are_scoped_to_resources_of_this_template(template: SamTemplate) -> None:
    # Given the SAM policy templates (e.g. LambdaInvokePolicy) in every resource's Policies
    resources = template.document["Resources"]
    scoped_by: list[tuple[str, str, Any]] = [
        (logical_id, policy_name, argument)
        for logical_id, resource in resources.items()
        for policy in as_list((resource.get("Properties") or {}).get("Policies", []))
        # (a Ref is a managed policy of the template, such as BedrockInvokePolicy, not a policy template)
        if isinstance(policy, dict) and not {"Statement", "Fn::If", "Ref"} & policy.keys()
        for policy_name, arguments in policy.items()
        for argument in (arguments or {}).values()
    ]
    # When / Then each names a resource of this template by Ref or GetAtt, never a pattern or a literal
    assert scoped_by, "the state machine's Lambda invoke policies are expected here"
    for logical_id, policy_name, argument in scoped_by:
        target = argument.get("Ref") if isinstance(argument, dict) else None
        if isinstance(argument, dict) and "Fn::GetAtt" in argument:
            target = as_list(argument["Fn::GetAtt"])[0]
        assert target in resources, f"{logical_id}: {policy_name} is given {argument!r}, not a resource of the template"


def test_conditional_managed_policies_are_policies_of_this_template(template: SamTemplate) -> None:
    # Given the policies attached only under a condition (the configured-resources read policy)
    resources = template.document["Resources"]
    conditional = [
        (logical_id, policy["Fn::If"])
        for logical_id, resource in resources.items()
        for policy in as_list((resource.get("Properties") or {}).get("Policies", []))
        if isinstance(policy, dict) and "Fn::If" in policy
    ]
    # When / Then each attaches a managed policy of this template, under that policy's own condition
    assert conditional, "the functions that build models or tools get the configured-resources read policy"
    for logical_id, (condition, attached, otherwise) in conditional:
        target = resources.get(attached.get("Ref"), {})
        assert target.get("Type") == "AWS::IAM::ManagedPolicy", f"{logical_id}: {attached!r}"
        assert target.get("Condition") == condition, f"{logical_id}: attached under {condition}"
        assert otherwise == {"Ref": "AWS::NoValue"}


def test_every_task_retries_lambda_service_errors_and_transient_errors_with_jittered_backoff(
    definition: dict[str, Any],
) -> None:
    # Given every Task of the state machine, Map items included
    for name, state, _ in task_states(definition["States"]):
        retriers = state.get("Retry", [])
        # When its retriers are read / Then they cover Lambda's service errors and the transient model error
        covered = {error for retrier in retriers for error in retrier["ErrorEquals"]}
        assert LAMBDA_SERVICE_ERRORS | {LLMTransientError.__name__} <= covered, f"{name} retries only {covered}"
        # And the transient errors back off exponentially with full jitter
        transient = next(r for r in retriers if LLMTransientError.__name__ in r["ErrorEquals"])
        assert transient.get("BackoffRate", 2.0) > 1 and transient.get("JitterStrategy") == "FULL", name


def test_every_task_failure_is_caught_into_the_failure_recorder(definition: dict[str, Any]) -> None:
    # Given every Task of the state machine, Map items included
    states = definition["States"]
    for name, state, enclosing_map in task_states(states):
        # When its catchers are read (a Map item's errors its own Catch does not take reach the Map's)
        catchers = state.get("Catch", []) + (enclosing_map or {}).get("Catch", [])
        catch_all = [catcher for catcher in catchers if "States.ALL" in catcher["ErrorEquals"]]
        # Then any error leads to FormatFailure, and FormatFailure's own error to a Fail state, never nowhere
        assert catch_all, f"{name} has no States.ALL catcher, its failure would leave the run RUNNING"
        if name == FAILURE_RECORDER:
            assert states[catch_all[0]["Next"]]["Type"] == "Fail"
        elif name in AFTER_THE_END:
            assert catch_all[0]["Next"] == state["Next"] == AFTER_THE_END[name], name
        else:
            assert catch_all[0]["Next"] == FAILURE_RECORDER, name


def test_the_state_machine_has_a_timeout(definition: dict[str, Any]) -> None:
    # Given / When the definition's top level is read
    timeout = definition.get("TimeoutSeconds")
    # Then a whole execution is bounded in time
    assert isinstance(timeout, int) and timeout > 0


def test_every_task_waits_at_least_as_long_as_its_function_may_run(
    template: SamTemplate, definition: dict[str, Any]
) -> None:
    # Given each Task's function, found through the template's DefinitionSubstitutions (rendered `<Logical.Arn>`)
    for name, state, _ in task_states(definition["States"]):
        reference = state["Parameters"]["FunctionName"]
        logical_id = reference.removeprefix("<").removesuffix(".Arn>")
        assert logical_id in template.functions, f"{name} invokes {reference}, which names no function of the template"
        # When / Then the Task's timeout covers the function's, so no invocation is abandoned while it runs
        function_timeout = template.functions[logical_id].timeout
        assert function_timeout is not None
        if "TimeoutSecondsPath" in state:
            # a callback task waits for its token's answer, as long as the run's configuration says
            assert state["TimeoutSecondsPath"].startswith("$."), name
        else:
            assert state["TimeoutSeconds"] >= function_timeout, name


def test_tasks_that_pass_the_payload_on_select_every_contract_field(definition: dict[str, Any]) -> None:
    # Given the Tasks whose result replaces the payload and flows on to another state that is not the end
    states = definition["States"]
    contract = {f"{field}.$": f"$.Payload.{field}" for field in StatePayload.model_fields}
    final_output = {f"{field}.$": f"$.Payload.{field}" for field in FormatResult.model_fields}
    feeding = [
        (name, state)
        for name, state, enclosing_map in task_states(states)
        if enclosing_map is None
        and state.get("ResultPath") == "$"
        and states[state["Next"]]["Type"] not in ("Succeed", "Fail")
    ]
    # When / Then each ResultSelector keeps exactly the fields of the payload contract (StatePayload); Format's,
    # read by the online eval's Choice, keeps those of the machine's final output (FormatResult)
    assert "IterationGuard" in [name for name, _ in feeding]
    for name, state in feeding:
        expected = final_output if name == "Format" else contract
        assert state.get("ResultSelector") == expected, name


def test_every_result_selector_reads_each_field_from_the_lambda_payload_under_its_own_name(
    definition: dict[str, Any],
) -> None:
    # Given every Task with a ResultSelector
    tasks = task_states(definition["States"])
    selectors = {name: state["ResultSelector"] for name, state, _ in tasks if "ResultSelector" in state}
    # When / Then each field comes from the same-named field of the function's return value, never renamed
    assert selectors
    for name, selector in selectors.items():
        assert selector, f"{name} has an empty ResultSelector"
        for key, path in selector.items():
            field = key.removesuffix(".$")
            assert path == f"$.Payload.{field}", f"{name}: {key} reads {path}"
