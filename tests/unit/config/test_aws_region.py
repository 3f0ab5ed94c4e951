"""A Bedrock model's Region, from one resolver: the model's `region:`, its profile's, `AWS_REGION`,
`AWS_DEFAULT_REGION`, the caller's AWS configuration file; with none of them, one line naming the fix, at
load and in `config check --aws`, never botocore's `NoRegionError`.

The environment is the test's own: every AWS_* Region variable removed, and AWS_CONFIG_FILE an empty file
unless a test writes a Region in it. Bedrock is the loopback stand-in, which records the Region each call
was signed for."""

from __future__ import annotations

import io
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.cli import main
from stepwise.config.aws_region import NoRegion, bedrock_region
from stepwise.config.model import StepwiseConfig
from stepwise.llm import build_chat_model
from stepwise.models.messages import ChatMessage, ChatRequest
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from tests.support.aws_loopback import AwsLoopback, converse_reply
from tests.support.loopback_http import LoopbackHttpServer

MODEL_ID = "us.amazon.nova-2-lite-v1:0"


@pytest.fixture
def no_region(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No Region anywhere: neither variable, and an AWS configuration file that names none; its path."""
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    config_file = tmp_path / "aws-config"
    config_file.write_text("", encoding="utf-8")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config_file))
    return config_file


@pytest.fixture
def bedrock(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsLoopback]:
    """The loopback Bedrock, answering every Converse call, reached through the SDK's endpoint variable."""
    with AwsLoopback() as loopback:
        loopback.default_converse(converse_reply(text="Hello"))
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", loopback.url)
        yield loopback


def bedrock_config(model: dict[str, Any] | None = None, **profiles: dict[str, Any]) -> StepwiseConfig:
    """Bedrock model `m` (with `model`'s extra fields) and the given profiles (default: one, on `m`)."""
    return StepwiseConfig.model_validate(
        {
            "models": {"m": {"provider": "bedrock", "model_id": MODEL_ID, **(model or {})}},
            "profiles": profiles or {"default": {"model": "m"}},
        }
    )


def ask(model: Any) -> None:
    model.complete(ChatRequest(messages=[ChatMessage(role="user", content="hi")]))


def test_aws_region_alone_is_a_region(no_region: Path) -> None:
    # Given only AWS_REGION (boto3 itself reads AWS_DEFAULT_REGION and the file, not it)
    # When the model's Region is resolved / Then it is AWS_REGION's
    assert bedrock_region("m", None, None, environ={"AWS_REGION": "eu-north-1"}) == "eu-north-1"


def test_aws_region_comes_before_aws_default_region(no_region: Path) -> None:
    # Given both variables, naming different Regions / When resolved / Then AWS_REGION wins
    environ = {"AWS_REGION": "eu-north-1", "AWS_DEFAULT_REGION": "us-west-2"}
    assert bedrock_region("m", None, environ=environ) == "eu-north-1"


def test_the_model_and_then_its_profile_come_before_the_environment(no_region: Path) -> None:
    # Given the environment's Region
    environ = {"AWS_REGION": "eu-north-1"}
    # When the model names one, or only its profile does / Then that one is the Region
    assert bedrock_region("m", "ap-south-1", "us-west-2", environ=environ) == "ap-south-1"
    assert bedrock_region("m", None, "us-west-2", environ=environ) == "us-west-2"


def test_the_callers_aws_configuration_file_is_the_last_source(no_region: Path) -> None:
    # Given no variable, and the AWS configuration file's default profile naming a Region
    no_region.write_text("[default]\nregion = ca-central-1\n", encoding="utf-8")
    # When resolved / Then it is the file's
    assert bedrock_region("m", None, environ={}) == "ca-central-1"


def test_no_region_anywhere_is_one_line_naming_the_model_and_the_fix(no_region: Path) -> None:
    # Given no Region anywhere / When resolved
    with pytest.raises(NoRegion) as refused:
        bedrock_region("m", None, None, environ={})
    # Then one line names the model and how to set one
    message = str(refused.value)
    assert "\n" not in message and "model 'm'" in message
    assert "AWS_REGION" in message and "aws configure set region" in message


def test_a_bedrock_model_is_called_in_aws_regions_region(
    no_region: Path, bedrock: AwsLoopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given AWS_REGION alone in the environment
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    # When a Bedrock model is built and asked
    ask(build_chat_model(bedrock_config().models["m"], config_dir=Path()))
    # Then its call is signed for that Region
    assert [request.region for request in bedrock.requests] == ["eu-north-1"]


def test_a_bedrock_model_without_any_region_is_refused_in_one_line_when_built(no_region: Path) -> None:
    # Given no Region anywhere / When a Bedrock model is built
    # Then it is refused with the one-line configuration error, not botocore's NoRegionError
    with pytest.raises(NoRegion, match="no AWS Region is set"):
        build_chat_model(bedrock_config().models["m"], config_dir=Path())


def test_each_profile_calls_its_bedrock_model_in_the_profiles_region(
    no_region: Path, bedrock: AwsLoopback, dynamodb_table: tuple[Any, str]
) -> None:
    # Given one Bedrock model without a Region, used by two profiles that each name one
    config = bedrock_config(default={"model": "m", "region": "eu-west-1"}, us={"model": "m", "region": "us-west-2"})
    runtime = StepRuntime(config=config, config_dir=Path(), store=ConversationStore(*dynamodb_table))
    # When each profile's model is asked
    ask(runtime.chat_model("m", profile="default"))
    ask(runtime.chat_model("m", profile="us"))
    # Then each call is signed for its profile's Region
    assert [request.region for request in bedrock.requests] == ["eu-west-1", "us-west-2"]


def test_a_models_own_region_comes_before_its_profiles(no_region: Path) -> None:
    # Given a model that names its Region, in a profile that names another
    config = bedrock_config({"region": "ap-south-1"}, default={"model": "m", "region": "us-west-2"})
    # When the profile's view of the model is read / Then the model's own Region stays
    assert getattr(config.model_for("m", "default"), "region", None) == "ap-south-1"


def write_bedrock_config(folder: Path) -> Path:
    path = folder / "stepwise.yaml"
    document = {"models": {"m": {"provider": "bedrock", "model_id": MODEL_ID}}, "profiles": {"default": {"model": "m"}}}
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def test_config_check_aws_without_a_region_is_one_line_and_exit_2(
    no_region: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a Bedrock configuration and credentials, but no Region anywhere
    path = write_bedrock_config(tmp_path)
    # When it is checked against AWS
    code = main(["config", "check", str(path), "--aws"], out=io.StringIO())
    # Then nothing is asked of Bedrock: one line names the model and the fix, exit 2, no traceback
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("stepwise config check --aws: no AWS Region for the Bedrock model 'm': set AWS_REGION")


def test_run_with_credentials_but_no_region_is_refused_before_it_starts(
    no_region: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given credentials (the tests' own) but no Region anywhere, and a Bedrock configuration
    path = write_bedrock_config(tmp_path)
    out = io.StringIO()
    # When a question is run
    code = main(["run", "hi", "--config", str(path)], out=out)
    # Then no run starts: one line names the profile, the model and the fix, exit 2
    assert (code, out.getvalue()) == (2, "")
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("stepwise: profile 'default' cannot work: model 'm' is Bedrock and no AWS Region is set")


def test_config_check_of_a_stack_without_a_region_is_one_line_and_exit_2(
    no_region: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a configuration and credentials, but no Region anywhere to find the stack in
    path = write_bedrock_config(tmp_path)
    # When the deployment is checked by its stack name
    code = main(["config", "check", str(path), "--stack", "stepwise"], out=io.StringIO())
    # Then nothing is asked of AWS: one line says how to give a Region, exit 2, no traceback
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert (
        line.startswith("stepwise config check --aws: no AWS Region to find the stack stepwise in")
        and "--region" in line
    )


class _CloudFormationWithoutStacks(BaseHTTPRequestHandler):
    """CloudFormation's query API answering DescribeStacks as it does for a name it has no stack of."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = (
            b'<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type>'
            b"<Code>ValidationError</Code><Message>Stack with id stepwise does not exist</Message></Error>"
            b"<RequestId>5d5f6c5e-0000-1111-2222-333344445555</RequestId></ErrorResponse>"
        )
        self.send_response(400)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def test_config_check_of_a_stack_that_is_not_there_names_the_stack_and_the_region(
    no_region: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a Region and credentials, and a CloudFormation that has no stack of that name
    path = write_bedrock_config(tmp_path)
    with LoopbackHttpServer(_CloudFormationWithoutStacks) as cloudformation:
        monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", cloudformation.origin)
        # When the deployment is checked by that name
        code = main(["config", "check", str(path), "--stack", "stepwise", "--region", "eu-west-1"], out=io.StringIO())
    # Then one line says which stack was not found where, and what to check, exit 2
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "stepwise config check --aws: no stack named stepwise in eu-west-1: check --stack (sam deploy's stack_name) "
        "and --region"
    )


def test_config_check_of_a_stack_without_credentials_says_how_to_configure_them(
    no_region: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a Region but no credentials anywhere the SDK's chain looks
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(no_region))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    path = write_bedrock_config(tmp_path)
    # When the deployment is checked
    code = main(["config", "check", str(path), "--stack", "stepwise", "--region", "eu-west-1"], out=io.StringIO())
    # Then one line says no credentials were found and how to give some, exit 2
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("stepwise config check --aws: no AWS credentials were found; configure them (AWS_PROFILE")
