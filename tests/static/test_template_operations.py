"""The rest of template.yaml as AWS runs it today, resource by resource, rendered for given parameters:
KMS for customer-managed secrets, the vendedlogs log group, a Regional API, a retained and protected table, a
dead-letter queue on the EventBridge target, the Web Adapter layer as a parameter, and Lambda throttling
retried long enough for a new account's concurrency quota.
"""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT
from tests.support.cfn_render import Rendering, rendered_definition, statements

KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
PARAMETER = "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwise/openai-key"
THROTTLED = "Lambda.TooManyRequestsException"
# A new account's Lambda concurrency quota is 10: a burst past it must wait for running invocations to end.
MIN_THROTTLE_WAIT_SECONDS = 60


@pytest.fixture(scope="module")
def template() -> SamTemplate:
    return SamTemplate.load(PROJECT_ROOT / "template.yaml")


def read_policy(rendering: Rendering) -> list[dict[str, Any]]:
    return statements(rendering.resource("ConfiguredResourcesReadPolicy")["Properties"]["PolicyDocument"])


def test_customer_managed_keys_are_granted_decrypt_through_ssm_and_secrets_manager_only(
    template: SamTemplate,
) -> None:
    # Given a SecureString parameter under a customer managed key
    rendering = Rendering(template, {"SecretParameterArns": PARAMETER, "SecretKmsKeyArns": KEY}, region="eu-west-1")
    # When the read policy is rendered
    (decrypt,) = [s for s in read_policy(rendering) if s["Action"] == ["kms:Decrypt"]]
    # Then it may decrypt with that key only, and only on behalf of SSM and Secrets Manager
    assert decrypt["Resource"] == [KEY]
    assert decrypt["Condition"] == {
        "StringEquals": {"kms:ViaService": ["ssm.eu-west-1.amazonaws.com", "secretsmanager.eu-west-1.amazonaws.com"]}
    }


def test_without_customer_managed_keys_no_kms_permission_is_granted(template: SamTemplate) -> None:
    # Given parameters under the AWS managed key
    rendering = Rendering(template, {"SecretParameterArns": PARAMETER})
    # When the read policy is rendered / Then it grants no KMS action
    assert all("kms:" not in str(s["Action"]) for s in read_policy(rendering))


def test_the_state_machine_logs_to_a_vendedlogs_group(template: SamTemplate) -> None:
    # Given the state machine's log group
    group = Rendering(template).resource("StateMachineLogGroup")["Properties"]
    # Then its name is under /aws/vendedlogs/states/, which needs no CloudWatch Logs resource-policy entry
    assert group["LogGroupName"].startswith("/aws/vendedlogs/states/")


def test_the_api_is_regional(template: SamTemplate) -> None:
    # Given the REST API / Then its endpoint is Regional (its integration timeout can be raised past 29 s)
    assert Rendering(template).resource("StepwiseApi")["Properties"]["EndpointConfiguration"] == {"Type": "REGIONAL"}


def test_the_table_survives_stack_deletion_and_replacement_and_refuses_deletion(template: SamTemplate) -> None:
    # Given the conversation table
    table = Rendering(template).resource("ConversationTable")
    # Then it is retained on delete and on replacement, and deletion protection is on
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert table["Properties"]["DeletionProtectionEnabled"] is True


def test_the_eventbridge_target_has_a_dead_letter_queue_only_its_rule_may_fill(template: SamTemplate) -> None:
    # Given the execution-ended rule and the queue policy
    rendering = Rendering(template)
    event = rendering.resource("ExecutionEndedFunction")["Properties"]["Events"]["ExecutionEnded"]["Properties"]
    (statement,) = statements(rendering.resource("ExecutionEndedDeadLetterQueuePolicy")["Properties"]["PolicyDocument"])
    # Then undeliverable events go to the dead-letter queue, which EventBridge may write to for that rule only
    assert event["DeadLetterConfig"] == {"Arn": "<ExecutionEndedDeadLetterQueue.Arn>"}
    assert statement["Principal"] == {"Service": "events.amazonaws.com"} and statement["Action"] == "sqs:SendMessage"
    assert statement["Condition"] == {"ArnEquals": {"aws:SourceArn": "<ExecutionEndedFunctionExecutionEnded.Arn>"}}


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        ({}, "arn:aws:lambda:eu-west-1:753240598075:layer:LambdaAdapterLayerArm64:27"),
        (
            {"WebAdapterLayerArn": "arn:aws:lambda:eu-west-1:111122223333:layer:WebAdapterCopy:3"},
            "arn:aws:lambda:eu-west-1:111122223333:layer:WebAdapterCopy:3",
        ),
    ],
    ids=["public-layer", "own-copy"],
)
def test_the_web_adapter_layer_is_a_parameter(template: SamTemplate, parameters: dict[str, str], expected: str) -> None:
    # Given the stream function rendered with or without a layer of one's own
    function = Rendering(template, parameters, region="eu-west-1").resource("StreamFunction")["Properties"]
    # Then its one extra layer is AWS's public adapter, or the one given
    assert function["Layers"] == [expected]


def longest_wait(retrier: dict[str, Any]) -> float:
    """The longest total wait of a retrier (full jitter waits at most the interval of each attempt)."""
    interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
    cap = retrier.get("MaxDelaySeconds", float("inf"))
    return sum(min(interval * rate**attempt, cap) for attempt in range(retrier.get("MaxAttempts", 3)))


def test_every_task_retries_lambda_throttling_long_enough_for_a_new_accounts_quota(template: SamTemplate) -> None:
    # Given every Task of the state machine, Map items included
    definition = rendered_definition(template)
    tasks: list[tuple[str, dict[str, Any]]] = []

    def collect(states: dict[str, Any]) -> None:
        for name, state in states.items():
            if state["Type"] == "Task":
                tasks.append((name, state))
            if "ItemProcessor" in state:
                collect(state["ItemProcessor"]["States"])

    collect(definition["States"])
    # When its retrier of Lambda throttling is read
    for name, state in tasks:
        (throttling,) = [r for r in state["Retry"] if THROTTLED in r["ErrorEquals"]]
        # Then it waits a minute or more, with full jitter, before the run fails
        assert longest_wait(throttling) >= MIN_THROTTLE_WAIT_SECONDS, name
        assert throttling["JitterStrategy"] == "FULL", name
