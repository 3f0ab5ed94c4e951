"""The SAM template reader on fixtures/template.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepwise.local.asl import AslDefinitionError
from stepwise.local.template import SamTemplate, StateMachineDefinition, TemplateError
from tests.conftest import PROJECT_ROOT

from .support import FIXTURES


@pytest.fixture(scope="module")
def template() -> SamTemplate:
    return SamTemplate.load(FIXTURES / "template.yaml")


def test_every_serverless_function_is_read_with_an_absolute_code_uri(template: SamTemplate) -> None:
    # Given / When the fixture template is loaded
    # Then its three functions are there, with their folders resolved from the template's folder
    assert set(template.functions) == {"EchoFunction", "FailFunction", "BrokenFunction"}
    echo = template.functions["EchoFunction"]
    assert echo.code_uri == (FIXTURES / "functions" / "echo").resolve()
    assert echo.code_uri.is_absolute()
    assert echo.handler == "app.lambda_handler"


def test_globals_environment_merges_with_the_function_own_variables(template: SamTemplate) -> None:
    # Given Globals.Function.Environment and EchoFunction's own variables (LOG_LEVEL in both)
    # When / Then the function's value wins, the others are merged, intrinsics are kept as dicts
    assert template.functions["EchoFunction"].environment == {
        "LOG_LEVEL": "DEBUG",
        "TABLE_NAME": {"Ref": "ConversationTable"},
        "STAGE": {"Ref": "Stage"},
        "MODE": "echo",
    }
    assert template.functions["FailFunction"].environment["LOG_LEVEL"] == "INFO"


def test_globals_scalars_apply_unless_the_function_sets_its_own(template: SamTemplate) -> None:
    # Given Globals Timeout 10 / MemorySize 256, EchoFunction Timeout 30, FailFunction MemorySize !Ref FailMemory
    echo, fail = template.functions["EchoFunction"], template.functions["FailFunction"]

    # When / Then own values win, and a Ref to a parameter takes the parameter's Default
    assert (echo.timeout, echo.memory_size) == (30, 256)
    assert (fail.timeout, fail.memory_size) == (10, 512)


def test_short_form_tags_are_read_as_their_long_form(template: SamTemplate) -> None:
    # Given a template using every CloudFormation short-form tag
    document: dict[str, Any] = template.document

    # When / Then each is a long-form dict
    assert document["Conditions"]["NotProd"] == {"Fn::Not": [{"Condition": "IsProd"}]}
    assert document["Conditions"]["IsProd"] == {"Fn::Equals": [{"Ref": "Stage"}, "prod"]}
    tags = document["Resources"]["FailFunction"]["Properties"]["Tags"]
    assert tags["Zone"] == {"Fn::Select": [0, {"Fn::GetAZs": ""}]}
    assert tags["Shared"] == {"Fn::ImportValue": "SharedStackOutput"}
    assert tags["Size"] == {"Fn::If": ["IsProd", "large", "small"]}
    assert document["Resources"]["EchoFunction"]["Properties"]["Layers"] == [{"Fn::GetAtt": ["SharedLayer", "Arn"]}]


def test_the_only_state_machine_and_its_substitutions(template: SamTemplate) -> None:
    # Given / When the template's single state machine is asked for without a name
    state_machine = template.state_machine()

    # Then its definition path is absolute and both GetAtt forms are read the same way
    assert state_machine.logical_id == "PipelineStateMachine"
    assert state_machine.definition_path == (FIXTURES / "statemachine" / "pipeline.asl.json").resolve()
    assert state_machine.substitutions == {
        "EchoFunctionArn": {"Fn::GetAtt": ["EchoFunction", "Arn"]},
        "FailFunctionArn": {"Fn::GetAtt": ["FailFunction", "Arn"]},
        "TableName": {"Ref": "ConversationTable"},
    }


def test_render_definition_replaces_every_substitution(template: SamTemplate) -> None:
    # Given a resolver that names what it was given
    def resolve(value: Any) -> str:
        return template.function_for_reference(value) or "table-local"

    # When the definition is rendered
    definition = template.render_definition(template.state_machine(), resolve)

    # Then each ${Name} was replaced, inside longer strings too
    assert definition["States"]["Echo"]["Parameters"]["FunctionName"] == "EchoFunction"
    assert definition["States"]["Echo"]["Parameters"]["Payload"]["table"] == "table-local"
    assert "table-local is substituted too" in definition["Comment"]


def test_substitution_is_textual_so_unquoted_numbers_work(template: SamTemplate, tmp_path: Path) -> None:
    # Given a definition file with an unquoted placeholder, as CloudFormation allows
    source = tmp_path / "machine.asl.json"
    source.write_text('{"StartAt": "A", "States": {"A": {"Type": "Wait", "Seconds": ${Pause}, "End": true}}}')
    state_machine = StateMachineDefinition(logical_id="M", definition_path=source, substitutions={"Pause": 5})

    # When it is rendered
    definition = template.render_definition(state_machine, str)

    # Then the number is a number
    assert definition["States"]["A"]["Seconds"] == 5


def test_a_placeholder_without_substitution_is_a_definition_error_naming_it(
    template: SamTemplate, tmp_path: Path
) -> None:
    # Given a definition that uses ${Unknown}
    source = tmp_path / "machine.asl.json"
    source.write_text('{"StartAt": "A", "States": {"A": {"Type": "Pass", "Comment": "${Unknown}", "End": true}}}')
    state_machine = StateMachineDefinition(logical_id="M", definition_path=source, substitutions={})

    # When / Then rendering it names the missing entry
    with pytest.raises(AslDefinitionError, match=r"\$\{Unknown\}"):
        template.render_definition(state_machine, str)


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ({"Fn::GetAtt": ["EchoFunction", "Arn"]}, "EchoFunction"),
        ({"Fn::GetAtt": "FailFunction.Arn"}, "FailFunction"),
        ({"Ref": "EchoFunction"}, "EchoFunction"),
        ({"Fn::Sub": "${FailFunction.Arn}"}, "FailFunction"),
        ({"Ref": "ConversationTable"}, None),
        ({"Fn::GetAtt": ["SharedLayer", "Arn"]}, None),
        ("EchoFunction", None),
    ],
)
def test_function_for_reference(template: SamTemplate, reference: Any, expected: str | None) -> None:
    # Given / When / Then a reference to a function gives its logical id, anything else None
    assert template.function_for_reference(reference) == expected


def test_asking_for_an_unknown_state_machine_lists_the_known_ones(template: SamTemplate) -> None:
    # Given / When / Then an unknown logical id is refused with the known ones
    with pytest.raises(TemplateError, match="PipelineStateMachine"):
        template.state_machine("Other")


def test_a_function_without_code_uri_is_refused_naming_it(tmp_path: Path) -> None:
    # Given a template whose function has no CodeUri
    source = tmp_path / "template.yaml"
    source.write_text(
        "Resources:\n  Lonely:\n    Type: AWS::Serverless::Function\n    Properties:\n      Handler: app.h\n"
    )

    # When / Then loading it names the function and the property
    with pytest.raises(TemplateError, match=r"Lonely.*CodeUri"):
        SamTemplate.load(source)


@pytest.mark.parametrize(
    ("workflow_type", "resource", "token_path"),
    [
        ("STANDARD", "arn:aws:states:::lambda:invoke.waitForTaskToken", "$$.Task.Token"),
        ("EXPRESS", "arn:aws:states:::lambda:invoke", "$$.Execution.Id"),
    ],
)
def test_the_wait_for_approval_is_a_callback_only_on_standard_workflows(
    workflow_type: str, resource: str, token_path: str
) -> None:
    # Given the project's template, whose wait-for-approval substitutions depend on the workflow type
    project = SamTemplate.load(PROJECT_ROOT / "template.yaml")
    substitutions = project.state_machine().substitutions
    parameters = {"WorkflowType": workflow_type}

    # When they are resolved as CloudFormation would for that workflow type
    chosen = (
        project.literal_substitution(substitutions["ApprovalWaitResource"], parameters),
        project.literal_substitution(substitutions["ApprovalTaskTokenPath"], parameters),
    )

    # Then Express (which refuses callbacks) gets a plain invoke that passes no token
    assert chosen == (resource, token_path)
