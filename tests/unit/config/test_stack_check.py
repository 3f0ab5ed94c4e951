"""`stepwise config check --aws --stack NAME`: the deployment checked as it runs, in its Region, as its role.

CloudFormation, Bedrock, IAM and Lambda are botocore's Stubber on real clients, so every request and answer
is checked against the service models botocore ships (no AWS account is needed).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepwise.config.stack_check import check_deployment

TODAY = date(2026, 11, 27)
REGION = "eu-west-1"
ACCOUNT = "123456789012"
NOVA = "amazon.nova-2-lite-v1:0"
GLOBAL_NOVA = f"global.{NOVA}"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/stepwise-LLMCallFunctionRole-AbC123"
STACK_ID = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/stepwise/4f1e2d3c-0000-1111-2222-333344445555"


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    """A configuration whose Bedrock model id comes from the deployment, as config/stepwise.yaml's does."""
    path = tmp_path / "stepwise.yaml"
    path.write_text(
        "models:\n"
        "  nova:\n"
        "    provider: bedrock\n"
        "    model_id: ${env:BEDROCK_MODEL_ID:-us.amazon.nova-2-lite-v1:0}\n"
        "profiles:\n"
        "  default:\n"
        "    model: nova\n"
        "    limits: {max_parallel_calls: 4}\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def aws() -> Iterator[dict[str, tuple[Any, Stubber]]]:
    """A stubbed client per service, all in the stack's Region; each must have used all its answers."""
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x")
    stubbed = {}
    for service in ("cloudformation", "bedrock", "iam", "lambda"):
        client = session.client(service, region_name=REGION)
        stubbed[service] = (client, Stubber(client))
    for _, stubber in stubbed.values():
        stubber.activate()
    yield stubbed
    for _, stubber in stubbed.values():
        stubber.assert_no_pending_responses()
        stubber.deactivate()


def clients_of(aws: dict[str, tuple[Any, Stubber]]) -> Any:
    def client(service: str, region: str) -> Any:
        assert region == REGION, f"{service} asked in {region}"
        return aws[service][0]

    return client


def expect_stack(stubber: Stubber, model_id: str) -> None:
    stack = {
        "StackName": "stepwise",
        "StackId": STACK_ID,
        "CreationTime": "2026-11-20T10:00:00Z",
        "StackStatus": "CREATE_COMPLETE",
        "Parameters": [{"ParameterKey": "BedrockModelId", "ParameterValue": model_id}],
    }
    stubber.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": "stepwise"})
    resource = {
        "LogicalResourceId": "LLMCallFunctionRole",
        "PhysicalResourceId": ROLE.rsplit("/", 1)[1],
        "ResourceType": "AWS::IAM::Role",
        "LastUpdatedTimestamp": "2026-11-20T10:00:00Z",
        "ResourceStatus": "CREATE_COMPLETE",
    }
    stubber.add_response(
        "describe_stack_resource",
        {"StackResourceDetail": resource},
        {"StackName": "stepwise", "LogicalResourceId": "LLMCallFunctionRole"},
    )


def global_profile() -> dict[str, Any]:
    return {
        "inferenceProfileName": "GLOBAL Nova 2 Lite",
        "inferenceProfileArn": f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{GLOBAL_NOVA}",
        "inferenceProfileId": GLOBAL_NOVA,
        "models": [
            {"modelArn": f"arn:aws:bedrock:{REGION}::foundation-model/{NOVA}"},
            {"modelArn": f"arn:aws:bedrock:us-east-1::foundation-model/{NOVA}"},
        ],
        "status": "ACTIVE",
        "type": "SYSTEM_DEFINED",
    }


def expect_bedrock_check(stubber: Stubber) -> None:
    """The Bedrock questions about the deployed global profile: the profile, its model, the account's access."""
    stubber.add_response("get_inference_profile", global_profile(), {"inferenceProfileIdentifier": GLOBAL_NOVA})
    details = {
        "modelArn": f"arn:aws:bedrock:{REGION}::foundation-model/{NOVA}",
        "modelId": NOVA,
        "modelName": "Nova 2 Lite",
        "providerName": "Amazon",
        "inferenceTypesSupported": ["INFERENCE_PROFILE"],
        "modelLifecycle": {"status": "ACTIVE"},
    }
    stubber.add_response("get_foundation_model", {"modelDetails": details}, {"modelIdentifier": NOVA})
    available = {
        "modelId": NOVA,
        "agreementAvailability": {"status": "AVAILABLE"},
        "authorizationStatus": "AUTHORIZED",
        "entitlementAvailability": "AVAILABLE",
        "regionAvailability": "AVAILABLE",
    }
    stubber.add_response("get_foundation_model_availability", available, {"modelId": NOVA})


def expect_simulation(stubber: Stubber, resource: str, decision: str, profile: str = GLOBAL_NOVA) -> None:
    context = [
        {
            "ContextKeyName": "bedrock:InferenceProfileArn",
            "ContextKeyValues": [f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{profile}"],
            "ContextKeyType": "string",
        }
    ]
    result = {"EvalActionName": "bedrock:InvokeModel", "EvalResourceName": resource, "EvalDecision": decision}
    stubber.add_response(
        "simulate_principal_policy",
        {"EvaluationResults": [result], "IsTruncated": False},
        {
            "PolicySourceArn": ROLE,
            "ActionNames": ["bedrock:InvokeModel"],
            "ResourceArns": [resource],
            "ContextEntries": context,
        },
    )


def expect_concurrency(stubber: Stubber, unreserved: int) -> None:
    limit = {
        "TotalCodeSize": 80530636800,
        "CodeSizeUnzipped": 262144000,
        "CodeSizeZipped": 52428800,
        "ConcurrentExecutions": unreserved,
        "UnreservedConcurrentExecutions": unreserved,
    }
    stubber.add_response("get_account_settings", {"AccountLimit": limit, "AccountUsage": {}}, {})


def test_the_stacks_model_region_and_role_are_checked_and_a_missing_grant_names_its_action(
    config_file: Path, aws: dict[str, tuple[Any, Stubber]]
) -> None:
    # Given a stack in eu-west-1 deployed with the global Nova 2 Lite profile, whose LLMCall role lacks the
    # Region-less foundation model, on an account with a new account's concurrency of 10
    expect_stack(aws["cloudformation"][1], GLOBAL_NOVA)
    expect_bedrock_check(aws["bedrock"][1])
    aws["bedrock"][1].add_response(
        "get_inference_profile", global_profile(), {"inferenceProfileIdentifier": GLOBAL_NOVA}
    )
    regionless = f"arn:aws:bedrock:::foundation-model/{NOVA}"
    for resource in (
        f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{GLOBAL_NOVA}",
        f"arn:aws:bedrock:{REGION}::foundation-model/{NOVA}",
        f"arn:aws:bedrock:us-east-1::foundation-model/{NOVA}",
    ):
        expect_simulation(aws["iam"][1], resource, "allowed")
    expect_simulation(aws["iam"][1], regionless, "implicitDeny")
    expect_concurrency(aws["lambda"][1], 10)
    # When the deployment is checked (the caller's own Region is elsewhere)
    report = check_deployment(
        config_file, clients_of(aws), today=TODAY, environ={"AWS_REGION": REGION}, stack_name="stepwise"
    )
    # Then Bedrock was asked in the stack's Region about the stack's model id, and found nothing wrong
    assert (report.region, report.model_id, report.bedrock) == (REGION, GLOBAL_NOVA, [])
    # And the role's one missing grant is named by its action and resource, the concurrency by what it lacks
    problem, warning = report.findings
    assert problem.level == "problem" and f"may not call bedrock:InvokeModel on {regionless}" in problem.line()
    assert f"BedrockModelId={GLOBAL_NOVA}" in problem.fix
    assert warning.level == "warning" and "is 10, below the 50" in warning.line()
    assert report.failed


def test_a_us_profile_checked_in_europe_names_the_region_without_asking_bedrock(
    config_file: Path, aws: dict[str, tuple[Any, Stubber]]
) -> None:
    # Given a deployment to be, in eu-west-1, calling the US profile; an account with room for the load
    expect_concurrency(aws["lambda"][1], 1000)
    # When it is checked with --region and --model-id
    report = check_deployment(
        config_file, clients_of(aws), today=TODAY, environ={}, region=REGION, model_id=f"us.{NOVA}"
    )
    # Then the one problem names the Region as the cause, and the global profile to use instead
    (problem,) = report.bedrock
    assert f"no us. inference profile in {REGION}" in problem.line() and GLOBAL_NOVA in problem.line()
    assert report.findings == [] and report.failed


def test_an_express_stack_warns_of_each_profile_whose_deadline_express_cuts(config_file: Path) -> None:
    # Given the configuration with a profile allowing 600 s (the default) and one allowing 120 s
    from stepwise.config.loading import read_config_file
    from stepwise.config.stack_check import express_findings

    config = read_config_file(config_file).config
    short = config.profiles["default"].model_copy(
        update={"limits": config.profiles["default"].limits.model_copy(update={"max_execution_seconds": 120})}
    )
    config = config.model_copy(update={"profiles": {**config.profiles, "short": short}})
    # When it is checked for an Express stack, and for a Standard one
    express, standard = express_findings(config, "EXPRESS"), express_findings(config, "STANDARD")
    # Then only the long profile on Express is named, with the 180 s its runs get
    assert [finding.text.split(" allows")[0] for finding in express] == ["profile default"]
    assert "at 180 s" in express[0].text and standard == []


def test_a_model_the_configuration_names_itself_is_checked_against_the_roles_grants_too(
    tmp_path: Path, aws: dict[str, tuple[Any, Stubber]]
) -> None:
    # Given a configuration whose second model names its own US Claude profile instead of reading
    # BedrockModelId, checked against the global Nova stack in eu-west-1
    claude = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    path = tmp_path / "stepwise.yaml"
    path.write_text(
        "models:\n"
        "  nova: {provider: bedrock, model_id: '${env:BEDROCK_MODEL_ID:-us.amazon.nova-2-lite-v1:0}'}\n"
        f"  claude: {{provider: bedrock, model_id: {claude}}}\n"
        "profiles:\n"
        "  default: {model: nova}\n"
        "  careful: {model: claude}\n",
        encoding="utf-8",
    )
    expect_stack(aws["cloudformation"][1], GLOBAL_NOVA)
    bedrock = aws["bedrock"][1]
    expect_bedrock_check(bedrock)
    bedrock.add_response("get_inference_profile", global_profile(), {"inferenceProfileIdentifier": GLOBAL_NOVA})
    for resource in (
        f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{GLOBAL_NOVA}",
        f"arn:aws:bedrock:{REGION}::foundation-model/{NOVA}",
        f"arn:aws:bedrock:us-east-1::foundation-model/{NOVA}",
        f"arn:aws:bedrock:::foundation-model/{NOVA}",
    ):
        expect_simulation(aws["iam"][1], resource, "allowed")
    # the US profile does not exist in eu-west-1, so Bedrock names no destination Region
    bedrock.add_client_error("get_inference_profile", "ResourceNotFoundException", "not found", 404)
    claude_profile = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{claude}"
    expect_simulation(aws["iam"][1], claude_profile, "implicitDeny", profile=claude)
    model = claude.split(".", 1)[1]
    expect_simulation(aws["iam"][1], f"arn:aws:bedrock:{REGION}::foundation-model/{model}", "implicitDeny", claude)
    expect_concurrency(aws["lambda"][1], 1000)
    # When the deployment is checked
    report = check_deployment(path, clients_of(aws), today=TODAY, environ={}, stack_name="stepwise", region=REGION)
    # Then the Claude profile is named outside its geography, and the role's missing grants on it are named
    (problem,) = report.bedrock
    assert problem.model == "claude" and f"no us. inference profile in {REGION}" in problem.line()
    assert [finding.text.split(" on ")[-1].split(" (")[0] for finding in report.findings] == [
        claude_profile,
        f"arn:aws:bedrock:{REGION}::foundation-model/{model}",
    ]
    assert all(f"BedrockModelId={claude}" in finding.fix for finding in report.findings)


def test_a_caller_who_may_not_simulate_or_read_the_quota_gets_warnings_not_a_failure(
    aws: dict[str, tuple[Any, Stubber]],
) -> None:
    # Given a caller IAM refuses the simulation to, and Lambda its account settings
    from stepwise.config.stack_check import DeployedStack, concurrency_finding, role_findings

    aws["iam"][1].add_client_error("simulate_principal_policy", "AccessDenied", "not authorized", 403)
    aws["lambda"][1].add_client_error("get_account_settings", "AccessDeniedException", "not authorized", 403)
    stack = DeployedStack("stepwise", REGION, "aws", ACCOUNT, GLOBAL_NOVA, ROLE)
    # When the role and the concurrency are checked
    found = [
        *role_findings(aws["iam"][0], stack, []),
        concurrency_finding(aws["lambda"][0], region=REGION, max_parallel_calls=4, runs=10, waiting=0),
    ]
    # Then each says what was not checked and which permission would check it, as a warning
    assert [(finding.level, finding.fix.split(" allowed ")[1].split(" ")[0]) for finding in found if finding] == [
        ("warning", "iam:SimulatePrincipalPolicy"),
        ("warning", "lambda:GetAccountSettings"),
    ]
