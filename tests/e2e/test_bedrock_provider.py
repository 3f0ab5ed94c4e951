"""Bedrock as a laptop reaches it: the caller's own AWS identity, a loopback Converse endpoint that checks
requests as Bedrock does (tests/support/aws_loopback.py), and the errors a run survives, through the real
state machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ConfigWriter, http_api
from tests.support.aws_loopback import AwsLoopback, bedrock_error, converse_reply
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.tool_server import Json, ScriptableToolServer

PROFILE_ID = "us.amazon.nova-2-lite-v1:0"
CALLER_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
CALLER_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsLoopback]:
    """The loopback Bedrock/SSM endpoint, reached through the SDK's service endpoint variables."""
    with AwsLoopback() as loopback:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", loopback.url)
        monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", loopback.url)
        yield loopback


@pytest.fixture
def caller_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real-looking credentials and a region in the environment, as a user's shell has them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CALLER_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CALLER_SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")


def bedrock_model(model_id: str = PROFILE_ID) -> dict[str, Any]:
    return {"provider": "bedrock", "model_id": model_id, "timeout_seconds": 30, "capabilities": {"native_tools": True}}


def ask(local_run: Callable[..., Any], config_dir: Path, question: str = "What time is it?") -> Any:
    environment, _ = local_run(config_dir)
    meta, _ = environment.ask(question)
    return meta


def converse_calls(aws: AwsLoopback) -> list[Any]:
    return [request for request in aws.requests if request.path.endswith("/converse")]


def test_a_bedrock_run_is_signed_with_the_callers_key_and_region(
    aws: AwsLoopback, caller_identity: None, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given the caller's credentials and region in the environment, and a model answering through a profile
    aws.enqueue_converse(converse_reply(tool_uses=[{"name": "current_time", "input": {}}]))
    aws.enqueue_converse(converse_reply(text="It is noon."))
    config = write_config(bedrock_model(), builtin=["current_time"], strategy="function_calling")
    # When a question is asked locally
    meta = ask(local_run, config)
    # Then every Converse call was signed as the caller, in the caller's region, and the run succeeded
    signed = {(call.access_key_id, call.region, call.service) for call in converse_calls(aws)}
    assert signed == {(CALLER_KEY_ID, "eu-west-1", "bedrock")}
    assert (meta.status, meta.answer) == ("SUCCEEDED", "It is noon.")


def test_a_bedrock_run_with_only_aws_profile_uses_that_profiles_key_and_region(
    aws: AwsLoopback,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
) -> None:
    # Given no credentials in the environment, only AWS_PROFILE naming a profile of the AWS config files
    home = tmp_path_factory.mktemp("home")
    (home / "credentials").write_text(
        "[work]\naws_access_key_id = AKIAPROFILEEXAMPLE01\naws_secret_access_key = profile-secret-example\n"
    )
    (home / "config").write_text("[profile work]\nregion = ap-southeast-2\n")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "config"))
    monkeypatch.setenv("AWS_PROFILE", "work")
    aws.enqueue_converse(converse_reply(text="Hello from the profile."))
    config = write_config(bedrock_model(), builtin=["current_time"], strategy="function_calling")
    # When a question is asked locally
    meta = ask(local_run, config)
    # Then the call was signed with the profile's key in the profile's region
    assert {(call.access_key_id, call.region) for call in converse_calls(aws)} == {
        ("AKIAPROFILEEXAMPLE01", "ap-southeast-2")
    }
    assert (meta.status, meta.answer) == ("SUCCEEDED", "Hello from the profile.")


def test_an_ssm_key_reference_is_resolved_with_the_callers_identity(
    aws: AwsLoopback, caller_identity: None, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given an OpenAI-compatible model whose key is an SSM parameter the caller can read
    aws.put_parameter("/stepwise/provider-key", "sk-from-parameter-store")
    with FakeOpenAIServer() as server:
        server.enqueue(body=chat_completion(content="Keyed."))
        model = {
            "provider": "openai",
            "base_url": server.base_url,
            "model": "gpt-4o-mini",
            "api_key": "ssm:/stepwise/provider-key",
            "capabilities": {"native_tools": True},
        }
        config = write_config(model, builtin=["current_time"], strategy="function_calling")
        # When a question is asked locally
        meta = ask(local_run, config)
        sent_key = server.requests[0].headers["authorization"]
    # Then the parameter was read as the caller, in the caller's region (by each function that loads the
    # configuration, so each knows the secret to redact), and its value was the key sent
    reads = [request for request in aws.requests if request.target == "AmazonSSM.GetParameter"]
    assert reads
    assert {(read.access_key_id, read.region, read.service) for read in reads} == {(CALLER_KEY_ID, "eu-west-1", "ssm")}
    assert sent_key == "Bearer sk-from-parameter-store"
    assert (meta.status, meta.answer) == ("SUCCEEDED", "Keyed.")


def test_an_input_too_long_after_a_tool_answered_ends_with_the_tools_result(
    caller_identity: None, monkeypatch: pytest.MonkeyPatch, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a Bedrock model whose window holds the question, not the conversation after a long tool answer
    with AwsLoopback(context_window=600) as aws, ScriptableToolServer() as tools:
        tools.on("/v1/report", Json({"report": "Revenue grew 12 percent. " * 300}))
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", aws.url)
        aws.enqueue_converse(converse_reply(tool_uses=[{"name": "get_report", "input": {}}]))
        report = {"toolName": "get_report", "description": "The report", "method": "GET", "path": "/report"}
        config = write_config(bedrock_model(), apis=[http_api(f"{tools.url}/v1", report)], strategy="function_calling")
        # When a question is asked
        meta = ask(local_run, config)
    # Then Bedrock's ValidationException "Input is too long" ended the run with what the tool returned
    assert (meta.status, meta.stop_reason) == ("SUCCEEDED", "context_window")
    assert meta.error is not None and "Input is too long" in meta.error.message
    assert "Revenue grew 12 percent" in (meta.answer or "")


@pytest.mark.parametrize("transient", ["throttling", "model_not_ready", "service_unavailable"])
def test_a_transient_bedrock_error_is_retried_to_an_answer(
    transient: str, aws: AwsLoopback, caller_identity: None, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given Bedrock answering a transient error once, then an answer
    aws.enqueue_converse(bedrock_error(transient), converse_reply(text="Recovered."))
    config = write_config(bedrock_model(), builtin=["current_time"], strategy="function_calling")
    # When a question is asked
    meta = ask(local_run, config)
    # Then the call was retried and the run succeeded
    assert len(converse_calls(aws)) == 2
    assert (meta.status, meta.answer) == ("SUCCEEDED", "Recovered.")


def test_a_bare_model_id_that_needs_a_profile_fails_saying_how_to_fix_it(
    aws: AwsLoopback, caller_identity: None, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a model id without its geography prefix, for a model Bedrock serves only through a profile
    config = write_config(
        bedrock_model("amazon.nova-2-lite-v1:0"), builtin=["current_time"], strategy="function_calling"
    )
    # When a question is asked
    meta = ask(local_run, config)
    # Then nothing had been done, so the run failed, with Bedrock's reason and the fix
    assert (meta.status, meta.stop_reason, meta.outcome) == ("FAILED", "model_error", "none")
    assert meta.error is not None
    assert "on-demand throughput" in meta.error.message and "inference profile" in meta.error.message
    assert "fix: " in meta.error.message


@pytest.mark.parametrize("stop_reason", ["max_tokens", "malformed_tool_use"])
def test_an_unusable_tool_call_is_not_run_and_the_model_is_told(
    stop_reason: str,
    aws: AwsLoopback,
    caller_identity: None,
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
) -> None:
    # Given a reply whose tool call Converse marks cut at the output cap or malformed, then an answer
    aws.enqueue_converse(
        converse_reply(tool_uses=[{"name": "current_time", "input": {"timezone": "Eur"}}], stop_reason=stop_reason),
        converse_reply(text="Done."),
    )
    config = write_config(bedrock_model(), builtin=["current_time"], strategy="function_calling")
    # When a question is asked
    environment, _ = local_run(config)
    meta, _ = environment.ask("What time is it in Paris?")
    # Then the call was never run, the model was told why, and its next reply ended the run
    messages = environment.runtime.store.list_messages(meta.run_id)
    tool_results = [message.content for message in messages if message.role == "tool"]
    assert len(tool_results) == 1 and ("cut off" in tool_results[0] or "malformed" in tool_results[0])
    assert (meta.status, meta.answer) == ("SUCCEEDED", "Done.")


def test_a_conversation_that_fills_the_window_ends_with_the_context_window_stop(
    aws: AwsLoopback, caller_identity: None, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a tool call, then Converse stopping at every call because the conversation filled the window:
    # the loop's call, the summarizer's, the call made again after the summary, and once more cut to fit
    filled = converse_reply(text="The time i", stop_reason="model_context_window_exceeded")
    aws.enqueue_converse(converse_reply(tool_uses=[{"name": "current_time", "input": {}}]), *[filled] * 4)
    config = write_config(bedrock_model(), builtin=["current_time"], strategy="function_calling")
    # When a question is asked
    meta = ask(local_run, config)
    # Then the run ended on the context window with what the tool returned, once context management could
    # not make the call fit
    assert (meta.status, meta.stop_reason) == ("SUCCEEDED", "context_window")
    assert meta.error is not None and meta.error.type == "ContextWindowExhausted"
    assert meta.answer


@pytest.mark.parametrize(
    ("error", "fix"),
    [("access_denied", "bedrock:InvokeModel on the inference profile"), ("use_case_form", "use-case form")],
)
def test_a_refusal_after_a_tool_answered_ends_with_the_best_answer_and_the_fix(
    error: str,
    fix: str,
    aws: AwsLoopback,
    caller_identity: None,
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
) -> None:
    # Given a tool call, then Bedrock refusing the next call for a permission or account set-up reason
    refusal = bedrock_error(
        error,
        caller="arn:aws:iam::123456789012:user/dev",
        resource=f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{PROFILE_ID}",
    )
    aws.enqueue_converse(converse_reply(tool_uses=[{"name": "current_time", "input": {}}]), refusal)
    config = write_config(bedrock_model(), builtin=["current_time"], strategy="function_calling")
    # When a question is asked
    meta = ask(local_run, config)
    # Then the refusal was not retried, and the run ended with what the tool returned and the fix
    assert len(converse_calls(aws)) == 2
    assert (meta.status, meta.stop_reason) == ("SUCCEEDED", "model_error")
    assert meta.error is not None and fix in meta.error.message
    assert "current_time" in (meta.answer or "")
