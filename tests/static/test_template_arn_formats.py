"""Every ARN template.yaml grants an action on is of a resource type AWS documents for that action.

The formats are the resource types of the Service Authorization Reference ("Actions, resources, and
condition keys for" Amazon Bedrock, Amazon DynamoDB, AWS Step Functions, AWS Systems Manager, AWS
Secrets Manager, Amazon S3, AWS KMS; read 2026-11-25), as regular expressions over a rendered ARN. A grant
on an ARN of another type (a table ARN for an index query, a state machine ARN for StopExecution) is
accepted by IAM and matches nothing at run time: the call is denied in production only.

The template is rendered for each kind of model id and with every optional grant on; references to the
template's own resources are replaced by the ARNs CloudFormation returns for them (`Ref` of a state
machine, `Fn::GetAtt` `Arn` of a table), named after their logical id.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT
from tests.support.cfn_render import ACCOUNT, LOG_DELIVERY_ACTIONS, Rendering, statements

REGION = "eu-west-1"
_P = r"arn:aws"
_R = r"[a-z]{2}(-gov)?-[a-z]+-\d"
_A = r"\d{12}"
FOUNDATION_MODEL = rf"{_P}:bedrock:({_R})?::foundation-model/[^/:*]+:\d+(:[0-9a-z]+)?"
INFERENCE_PROFILE = rf"{_P}:bedrock:{_R}:{_A}:inference-profile/[^/*]+"
APPLICATION_PROFILE = rf"{_P}:bedrock:{_R}:{_A}:application-inference-profile/[a-z0-9]+"
TABLE = rf"{_P}:dynamodb:{_R}:{_A}:table/[A-Za-z0-9_.-]+"
INDEX = rf"{TABLE}/index/[A-Za-z0-9_.-]+"
STATE_MACHINE = rf"{_P}:states:{_R}:{_A}:stateMachine:[A-Za-z0-9_-]+"
EXECUTION = rf"{_P}:states:{_R}:{_A}:execution:[A-Za-z0-9_-]+:[^:]+"
ACTIVITY = rf"{_P}:states:{_R}:{_A}:activity:[A-Za-z0-9_-]+"
GUARDRAIL = rf"{_P}:bedrock:{_R}:{_A}:guardrail/[a-z0-9]+"

# the resource types of each action the template grants (the Service Authorization Reference's tables)
RESOURCE_TYPES: dict[str, list[str]] = {
    "bedrock:InvokeModel": [FOUNDATION_MODEL, INFERENCE_PROFILE, APPLICATION_PROFILE],
    "bedrock:ApplyGuardrail": [GUARDRAIL],
    "dynamodb:GetItem": [TABLE],
    "dynamodb:PutItem": [TABLE],
    "dynamodb:UpdateItem": [TABLE],
    "dynamodb:DeleteItem": [TABLE],
    "dynamodb:ConditionCheckItem": [TABLE],
    "dynamodb:BatchGetItem": [TABLE],
    "dynamodb:Query": [TABLE, INDEX],
    "states:StartExecution": [STATE_MACHINE],
    "states:StartSyncExecution": [STATE_MACHINE],
    "states:StopExecution": [EXECUTION],
    "states:SendTaskSuccess": [ACTIVITY, STATE_MACHINE],
    "states:SendTaskFailure": [ACTIVITY, STATE_MACHINE],
    "ssm:GetParameter": [rf"{_P}:ssm:{_R}:{_A}:parameter/[^*]+"],
    "secretsmanager:GetSecretValue": [rf"{_P}:secretsmanager:{_R}:{_A}:secret:[^*]+"],
    "s3:GetObject": [rf"{_P}:s3:::[a-z0-9.-]+/.+"],
    "kms:Decrypt": [rf"{_P}:kms:{_R}:{_A}:key/[0-9a-f-]+"],
}
# Step Functions' log delivery: the reference lists no resource type, so "*" is the only resource
RESOURCE_TYPES |= {action: [r"\*"] for action in LOG_DELIVERY_ACTIONS}

HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"
OPTIONAL_GRANTS = {
    "BedrockApplicationProfileArn": f"arn:aws:bedrock:{REGION}:{ACCOUNT}:application-inference-profile/a1b2c3d4e5f6",
    "SecretParameterArns": f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/stepwise/openai-key",
    "SecretArns": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:stepwise/github-AbCdEf",
    "ToolDocumentObjectArns": "arn:aws:s3:::stepwise-tools/openapi/stripe.json",
    "SecretKmsKeyArns": f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "BedrockGuardrailArns": f"arn:aws:bedrock:{REGION}:{ACCOUNT}:guardrail/gr1a2b3c4d5e",
}
MODEL_IDS = [HAIKU, f"eu.{HAIKU}", f"global.{HAIKU}"]

# what CloudFormation returns for a reference to a resource of the template, by its type
RETURNED_ARNS = {
    ("AWS::DynamoDB::Table", "Arn"): f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{{id}}",
    ("AWS::Serverless::StateMachine", ""): f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{{id}}",
    ("AWS::Serverless::StateMachine", "Name"): "{id}",
}
_PLACEHOLDER = re.compile(r"<([A-Za-z0-9]+)(?:\.([A-Za-z]+))?>")


@pytest.fixture(scope="module")
def template() -> SamTemplate:
    return SamTemplate.load(PROJECT_ROOT / "template.yaml")


def with_returned_arns(template: SamTemplate, text: str) -> str:
    """`text` with each `<LogicalId>` / `<LogicalId.Attr>` placeholder replaced by what CloudFormation returns."""

    def returned(match: re.Match[str]) -> str:
        logical_id, attribute = match.group(1), match.group(2) or ""
        kind = template.document["Resources"][logical_id]["Type"]
        return RETURNED_ARNS[(kind, attribute)].format(id=logical_id)

    return _PLACEHOLDER.sub(returned, text)


def granted(template: SamTemplate, model_id: str) -> list[tuple[str, str, str]]:
    """(resource, action, ARN) for every Allow statement of the template's IAM policies, rendered."""
    rendering = Rendering(template, {"BedrockModelId": model_id, **OPTIONAL_GRANTS}, region=REGION)
    found: list[tuple[str, str, str]] = []
    for logical_id, resource in template.document["Resources"].items():
        try:
            properties = rendering.resource(logical_id).get("Properties", {})
        except KeyError:
            continue
        documents: list[dict[str, Any]] = []
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            documents.append(properties["PolicyDocument"])
        policies = properties.get("Policies")
        if isinstance(policies, list):
            documents += [policy for policy in policies if isinstance(policy, dict) and "Statement" in policy]
        for document in documents:
            for statement in statements(document):
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                arns = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
                found += [(logical_id, action, with_returned_arns(template, arn)) for action in actions for arn in arns]
    return found


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_every_granted_arn_is_of_a_resource_type_its_action_takes(template: SamTemplate, model_id: str) -> None:
    # Given the template rendered with every optional grant on, for an in-Region, a geographic and a global
    # model id
    grants = granted(template, model_id)
    # When each (action, ARN) is held against the resource types AWS documents for the action
    unknown_actions = sorted({action for _, action, _ in grants} - set(RESOURCE_TYPES))
    mismatched = [
        (resource, action, arn)
        for resource, action, arn in grants
        if action in RESOURCE_TYPES and not any(re.fullmatch(form, arn) for form in RESOURCE_TYPES[action])
    ]
    # Then every action is one the table knows, and every ARN is of one of its action's resource types
    assert unknown_actions == []
    assert mismatched == []
    assert {action for _, action, _ in grants} >= {"bedrock:InvokeModel", "dynamodb:Query", "kms:Decrypt"}
