"""build_chat_model: the provider a config describes, with secrets resolved and paths anchored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import httpx
from botocore.stub import Stubber

from stepwise.config.llm import (
    BedrockModelConfig,
    OpenAIModelConfig,
    ScriptedModelConfig,
    ScriptScenario,
    ScriptTurn,
)
from stepwise.llm import ChatModel, build_chat_model
from stepwise.llm.bedrock import BedrockConverseChatModel
from stepwise.models.messages import ChatMessage, ChatRequest
from tests.support.openai_server import FakeOpenAIServer

QUESTION = ChatRequest(messages=[ChatMessage(role="user", content="hello")])


def test_an_openai_api_key_goes_through_the_secret_resolver(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    # Given a config whose key is a secret reference, and a resolver for it
    config = OpenAIModelConfig(
        provider="openai", base_url=openai_server.base_url, model="gpt-test", api_key="ssm:/stepwise/key"
    )
    resolved = {"ssm:/stepwise/key": "sk-resolved"}
    with httpx.Client() as http_client:
        model = build_chat_model(
            config, config_dir=tmp_path, http_client=http_client, secret_resolver=resolved.__getitem__
        )
        # When the model is called
        model.complete(QUESTION)
    # Then the server receives the resolved key
    assert openai_server.requests[0].headers["authorization"] == "Bearer sk-resolved"


def test_a_script_path_is_relative_to_the_config_dir(tmp_path: Path) -> None:
    # Given a script under the config directory, referred to by a relative path
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "demo.yaml").write_text("scenarios:\n  - turns: [{content: From file.}]\n")
    config = ScriptedModelConfig(provider="scripted", script="scripts/demo.yaml")
    # When the model is built and called, then it plays the file's turn
    assert build_chat_model(config, config_dir=tmp_path).complete(QUESTION).content == "From file."


def test_inline_scenarios_need_no_file(tmp_path: Path) -> None:
    # Given inline scenarios
    config = ScriptedModelConfig(provider="scripted", scenarios=[ScriptScenario(turns=[ScriptTurn(content="Inline.")])])
    # When the model is built and called, then it plays the inline turn
    assert build_chat_model(config, config_dir=tmp_path).complete(QUESTION).content == "Inline."


def test_a_bedrock_model_uses_the_given_client(tmp_path: Path) -> None:
    # Given a stubbed bedrock-runtime client expecting the configured model id
    client: Any = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    config = BedrockModelConfig(provider="bedrock", model_id="amazon.nova-lite-v1:0", region="us-east-1")
    with Stubber(client) as stubber:
        stubber.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "Hi."}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 5},
            },
            {"modelId": "amazon.nova-lite-v1:0", "messages": [{"role": "user", "content": [{"text": "hello"}]}]},
        )
        # When the model is built with it and called, then the stubbed answer comes back
        assert build_chat_model(config, config_dir=tmp_path, bedrock_client=client).complete(QUESTION).content == "Hi."


def test_a_bedrock_model_without_a_client_gets_its_own(tmp_path: Path) -> None:
    # Given a Bedrock config and no client
    config = BedrockModelConfig(provider="bedrock", model_id="amazon.nova-lite-v1:0", region="eu-west-1")
    # When the model is built, then it is a Converse chat model (nothing is sent yet)
    model = build_chat_model(config, config_dir=tmp_path)
    assert isinstance(model, BedrockConverseChatModel)
    assert isinstance(model, ChatModel)


def test_importing_the_package_does_not_load_boto3() -> None:
    # Given a fresh interpreter, when it imports stepwise.llm, then boto3 and botocore stay unloaded
    probe = "import sys, stepwise.llm; print(sorted({'boto3', 'botocore'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
