"""The reachability check before `stepwise run` reads AWS credentials as the Bedrock client will: the SDK's
own chain, so a caller with only AWS_PROFILE is not told they have no credentials."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.local.model_reach import unreachable_model

BEDROCK_ONLY = StepwiseConfig.model_validate(
    {
        "models": {"m": {"provider": "bedrock", "model_id": "us.amazon.nova-2-lite-v1:0"}},
        "profiles": {"default": {"model": "m"}},
    }
)


@pytest.fixture
def no_environment_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    # no instance metadata on a laptop: do not wait for it
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


def test_a_caller_with_only_aws_profile_can_reach_bedrock(
    no_environment_credentials: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no keys in the environment, only AWS_PROFILE naming a profile of the credentials file
    (no_environment_credentials / "credentials").write_text(
        "[work]\naws_access_key_id = AKIAPROFILEEXAMPLE01\naws_secret_access_key = profile-secret\n"
    )
    monkeypatch.setenv("AWS_PROFILE", "work")
    # When the configured model's reach is checked / Then nothing is reported
    assert unreachable_model(BEDROCK_ONLY) is None


def test_a_caller_without_any_credentials_is_told_how_to_configure_a_model(no_environment_credentials: Path) -> None:
    # Given no credentials anywhere
    # When the configured model's reach is checked / Then one line says so and how to fix it
    reason = unreachable_model(BEDROCK_ONLY)
    assert reason is not None and "no AWS credentials" in reason and "AWS_PROFILE" in reason
