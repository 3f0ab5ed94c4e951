"""The judge model of `stepwise eval` is built like any model: its key may be a secret reference."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import boto3
from moto import mock_aws

from stepwise.evals.suite import Suite
from stepwise.local.eval_command import _judge
from tests.support.openai_server import FakeOpenAIServer, chat_completion

JUDGE_KEY = "sk-judge-Wq7Rt2Yp9Lm4Zx6"


def test_a_judge_whose_key_is_a_secrets_manager_reference_is_sent_the_secret(tmp_path: Path) -> None:
    # Given a judge model whose api_key names a Secrets Manager secret, and a suite graded by it
    with mock_aws(config={"core": {"service_whitelist": ["secretsmanager"]}}), FakeOpenAIServer() as server:
        boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name="judge-key", SecretString=JUDGE_KEY)
        judge = {"provider": "openai", "base_url": server.base_url, "model": "m", "api_key": "secretsmanager:judge-key"}
        config = tmp_path / "stepwise.yaml"
        config.write_text(json.dumps({"models": {"judge": judge}, "profiles": {"default": {"model": "judge"}}}))
        suite = Suite.model_validate(
            {"name": "s", "judge": "judge", "cases": [{"id": "c", "input": "q", "expect": {"rubric": "is kind"}}]}
        )
        server.enqueue(body=chat_completion(content='{"pass": true, "reason": "kind"}'))
        # When the judge grades an answer
        grader = _judge(suite, argparse.Namespace(judge=None, suite=tmp_path / "suite.yaml"), config)
        assert grader is not None
        result = grader("is kind", "q", "a kind answer")
    # Then the model server was sent the secret's value, not the reference, and the verdict stands
    assert server.requests[0].headers["authorization"] == f"Bearer {JUDGE_KEY}"
    assert result.passed
