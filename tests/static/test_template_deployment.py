"""template.yaml rendered with its defaults, and per workflow type: the default model id in every Region
docs/deployment.md names, dotted model ids granted whole, a log group with retention per function, and the
machine timeout Express allows with the recorder Express needs.

The documented ids are those AWS's Amazon Nova 2 user guide ("Core inference") lists for Nova 2 Lite; AWS's
"Supported Regions and models for inference profiles" page says a global profile routes to every commercial
Region.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from stepwise.config.profile_geography import GEOGRAPHY_REGIONS
from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT
from tests.static.test_template_bedrock_grants import bedrock_grants, granted_arns
from tests.support.cfn_render import ACCOUNT, Rendering, rendered_definition

DOCUMENTED_NOVA_2_LITE_IDS = {"global.amazon.nova-2-lite-v1:0", "us.amazon.nova-2-lite-v1:0"}
REGION = re.compile(r"`([a-z]{2}(?:-gov)?-[a-z]+-\d)`")


@pytest.fixture(scope="module")
def template() -> SamTemplate:
    return SamTemplate.load(PROJECT_ROOT / "template.yaml")


def regions_the_docs_name() -> list[str]:
    """The Regions docs/deployment.md says the default model answers in (its "Regions" table)."""
    text = (PROJECT_ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = text.split("### Regions the default answers in", 1)[1].split("\n#", 1)[0]
    return REGION.findall(section)


def test_the_docs_name_regions_for_the_default() -> None:
    # Given / When docs/deployment.md's Region table is read / Then it names Regions on three continents
    regions = regions_the_docs_name()
    assert {region.split("-")[0] for region in regions} >= {"us", "eu", "ap"}


@pytest.mark.parametrize("region", regions_the_docs_name())
def test_the_default_model_id_is_documented_and_granted_in_every_region_the_docs_name(
    template: SamTemplate, region: str
) -> None:
    # Given the template rendered with its defaults in that Region
    rendering = Rendering(template, region=region)
    model_id = rendering.resource("LLMCallFunction")["Properties"]["Environment"]["Variables"]["BEDROCK_MODEL_ID"]
    # Then the functions call an id AWS documents, a profile that may be called from that Region
    assert model_id in DOCUMENTED_NOVA_2_LITE_IDS
    prefix, model = model_id.split(".", 1)
    assert prefix == "global" or region.startswith(f"{prefix}-")
    # And the grants cover the profile in that Region and the model it routes to
    arns = granted_arns(bedrock_grants(template, model_id, region))
    assert f"arn:aws:bedrock:{region}:{ACCOUNT}:inference-profile/{model_id}" in arns
    assert f"arn:aws:bedrock:::foundation-model/{model}" in arns


@pytest.mark.parametrize(
    ("model_id", "model"),
    [
        ("us.moonshotai.kimi-k2.5", "moonshotai.kimi-k2.5"),
        ("global.amazon.nova-2-lite-v1:0", "amazon.nova-2-lite-v1:0"),
        ("eu.a.b.c.d", "a.b.c.d"),
    ],
)
def test_a_profiles_model_keeps_every_dot_of_its_id(template: SamTemplate, model_id: str, model: str) -> None:
    # Given a profile id whose model has dots in its name
    region = "eu-west-1" if model_id.startswith("eu.") else "us-east-1"
    # When the grants are rendered
    arns = granted_arns(bedrock_grants(template, model_id, region))
    # Then the foundation model is granted under its whole name, never a cut one
    models = {arn.rsplit("/", 1)[1] for arn in arns if ":foundation-model/" in arn}
    assert models == {model}


def test_the_model_id_pattern_refuses_more_parts_than_the_grants_read(template: SamTemplate) -> None:
    # Given the parameter's pattern / When ids are matched / Then five parts after the first are refused
    pattern = re.compile(template.document["Parameters"]["BedrockModelId"]["AllowedPattern"])
    assert pattern.fullmatch("us.moonshotai.kimi-k2.5")
    assert pattern.fullmatch("amazon.nova-pro-v1:0")
    assert not pattern.fullmatch("us.a.b.c.d.e")


def test_every_function_logs_to_its_own_group_that_expires(template: SamTemplate) -> None:
    # Given the template rendered with a 14-day retention
    rendering = Rendering(template, {"LogRetentionDays": "14"})
    resources: dict[str, Any] = template.document["Resources"]
    functions = [name for name, resource in resources.items() if resource["Type"] == "AWS::Serverless::Function"]
    assert functions
    for name in functions:
        # When its logging configuration is read
        group = rendering.resource(name)["Properties"]["LoggingConfig"]["LogGroup"]
        logical_id = group.strip("<>")
        # Then it names a log group of the template that keeps logs 14 days, shared with no other function
        assert rendering.resource(logical_id)["Type"] == "AWS::Logs::LogGroup"
        assert rendering.resource(logical_id)["Properties"]["RetentionInDays"] == "14"
    groups = [rendering.resource(name)["Properties"]["LoggingConfig"]["LogGroup"] for name in functions]
    assert len(set(groups)) == len(groups)


@pytest.mark.parametrize(("workflow_type", "timeout"), [("STANDARD", 3600), ("EXPRESS", 300)])
def test_the_machine_timeout_follows_the_workflow_type(template: SamTemplate, workflow_type: str, timeout: int) -> None:
    # Given / When the definition is rendered for the workflow type
    definition = rendered_definition(template, workflow_type)
    # Then the execution's own limit is one that workflow type honours (Express stops at 300 s)
    assert definition["TimeoutSeconds"] == timeout


def test_express_sends_its_execution_ends_from_the_log_to_the_recorder(template: SamTemplate) -> None:
    # Given the template rendered for Express
    rendering = Rendering(template, {"WorkflowType": "EXPRESS"})
    # When the log subscription is read
    subscription = rendering.resource("ExecutionEndedLogSubscription")["Properties"]
    # Then the state machine's log sends the records of ended executions to ExecutionEnded
    assert subscription["LogGroupName"] == "<StateMachineLogGroup>"
    assert subscription["DestinationArn"] == "<ExecutionEndedFunction.Arn>"
    assert all(kind in subscription["FilterPattern"] for kind in ("ExecutionTimedOut", "ExecutionFailed"))
    permission = rendering.resource("ExecutionEndedLogPermission")["Properties"]
    assert permission["Principal"] == "logs.amazonaws.com"
    assert permission["SourceArn"] == "<StateMachineLogGroup.Arn>"


def test_standard_has_no_log_subscription(template: SamTemplate) -> None:
    # Given the template rendered for Standard (its ends come as EventBridge events) / Then no subscription
    with pytest.raises(KeyError):
        Rendering(template).resource("ExecutionEndedLogSubscription")


@pytest.mark.parametrize("prefix", sorted(GEOGRAPHY_REGIONS))
def test_the_preflights_geographies_are_the_templates_destination_lists(template: SamTemplate, prefix: str) -> None:
    # Given a profile of that geography, rendered in its first Region
    region = GEOGRAPHY_REGIONS[prefix][0]
    # When the Regions its foundation model is granted in are read
    arns = granted_arns(bedrock_grants(template, f"{prefix}.anthropic.claude-haiku-4-5-20251001-v1:0", region))
    granted = {arn.split(":")[3] for arn in arns if ":foundation-model/" in arn}
    # Then they are the Regions the preflight and the run-time hint call that geography
    assert granted == set(GEOGRAPHY_REGIONS[prefix])
