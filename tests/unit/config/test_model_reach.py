"""The check before a command asks its questions: only the models the command will use are checked, with
the SDK's own credential chain for Bedrock and a connection to an OpenAI-compatible endpoint; a profile that
cannot work is refused only when the command needs it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.config.model_reach import Preflight, preflight, profile_problems
from tests.support.ports import refused_port

BEDROCK_ONLY = StepwiseConfig.model_validate(
    {
        "models": {"m": {"provider": "bedrock", "model_id": "us.amazon.nova-2-lite-v1:0"}},
        "profiles": {"default": {"model": "m"}},
    }
)
SCRIPTED: dict[str, Any] = {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}


@pytest.fixture
def no_environment_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    # no instance metadata on a laptop: do not wait for it
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


@pytest.fixture
def closed_endpoint() -> Iterator[str]:
    """An OpenAI-compatible base URL on a loopback port that refuses connections."""
    with refused_port() as port:
        yield f"http://127.0.0.1:{port}/v1"


def config_with_broken_profile(
    base_url: str, *, default_model: str = "scripted", routed: bool = False
) -> StepwiseConfig:
    """`default` (on `default_model`) and `other` on a scripted model, `broken` on an endpoint at `base_url`;
    with `routed`, questions about invoices are classified and routed to `broken`."""
    routing: dict[str, Any] = {
        "intent": {
            "mode": "keywords",
            "categories": [{"use_for": "topic", "options": ["billing", "other"]}],
            "keywords": [{"use_for": "topic", "option": "billing", "patterns": ["invoice"]}],
        },
        "routes": [{"when": {"topic": "billing"}, "profile": "broken"}],
    }
    return StepwiseConfig.model_validate(
        {
            "models": {"scripted": SCRIPTED, "remote": {"provider": "openai", "base_url": base_url, "model": "x"}},
            "profiles": {
                "default": {"model": default_model},
                "other": {"model": "scripted"},
                "broken": {"model": "remote"},
            },
            **(routing if routed else {}),
        }
    )


def test_a_caller_with_only_aws_profile_can_reach_bedrock(
    no_environment_credentials: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no keys in the environment, only AWS_PROFILE naming a profile of the credentials file
    (no_environment_credentials / "credentials").write_text(
        "[work]\naws_access_key_id = AKIAPROFILEEXAMPLE01\naws_secret_access_key = profile-secret\n"
    )
    monkeypatch.setenv("AWS_PROFILE", "work")
    # When the default profile's model is checked / Then nothing is reported
    assert preflight(BEDROCK_ONLY, profiles=["default"]) == Preflight()


def test_a_caller_without_any_credentials_is_told_how_to_configure_a_model(no_environment_credentials: Path) -> None:
    # Given no credentials anywhere
    # When the profile a question is routed to is checked
    refusal = preflight(BEDROCK_ONLY, routed=True).refusal
    # Then one line names the profile, says so and how to fix it
    assert refusal is not None and "\n" not in refusal
    assert "profile 'default'" in refusal and "no AWS credentials" in refusal and "AWS_PROFILE" in refusal


def test_a_profile_asked_for_is_not_refused_for_another_profiles_model(closed_endpoint: str) -> None:
    # Given a configuration one of whose profiles is on an endpoint nothing listens on
    config = config_with_broken_profile(closed_endpoint)
    # When a command asks for another profile (`stepwise run --profile other`)
    result = preflight(config, profiles=["other"])
    # Then nothing is refused or warned about
    assert (result.refusal, result.warnings) == (None, [])


def test_the_profile_asked_for_is_refused_naming_it_and_its_endpoint(closed_endpoint: str) -> None:
    # Given the same configuration
    config = config_with_broken_profile(closed_endpoint)
    # When the command asks for the broken profile itself
    refusal = preflight(config, profiles=["broken"]).refusal
    # Then it is refused in one line naming the profile, the model and the endpoint
    assert refusal is not None
    assert refusal.startswith("profile 'broken' cannot work: model 'remote' at http://127.0.0.1:")
    assert "cannot be reached" in refusal


def test_a_routed_question_ignores_a_profile_no_route_leads_to(closed_endpoint: str) -> None:
    # Given no intent classification: every question goes to the default profile
    config = config_with_broken_profile(closed_endpoint)
    # When a question without a profile is checked
    result = preflight(config, routed=True)
    # Then the broken profile, which no question can reach, is not a reason to refuse or warn
    assert (result.refusal, result.warnings) == (None, [])


def test_a_route_to_a_profile_that_cannot_work_is_a_warning_when_the_default_works(closed_endpoint: str) -> None:
    # Given a route that sends billing questions to the broken profile
    config = config_with_broken_profile(closed_endpoint, routed=True)
    # When a question without a profile is checked
    result = preflight(config, routed=True)
    # Then it may run: one warning names the profile a question may be routed to that would fail
    assert result.refusal is None
    (warning,) = result.warnings
    assert warning.startswith("profile 'broken' cannot work, so a question routed to it fails: model 'remote'")


def test_a_routed_question_is_refused_when_no_profile_it_may_reach_can_work(closed_endpoint: str) -> None:
    # Given a route to the broken profile, and a default profile on the same endpoint
    config = config_with_broken_profile(closed_endpoint, default_model="remote", routed=True)
    # When a question without a profile is checked
    refusal = preflight(config, routed=True).refusal
    # Then it is refused: no profile it may be routed to can answer
    assert refusal is not None
    assert refusal.startswith("profile 'default' cannot work (nor can the 1 other profile(s) a route leads to)")


def test_an_endpoint_that_accepts_connections_it_has_not_served_yet_is_reachable() -> None:
    # Given a server that listens but is too busy to accept (its backlog takes the connection)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(8)
        base_url = f"http://127.0.0.1:{busy.getsockname()[1]}/v1"
        config = config_with_broken_profile(base_url)
        # When its profile is checked / Then it can work
        assert preflight(config, profiles=["broken"]).refusal is None


def test_a_judge_model_that_cannot_work_refuses_the_command(closed_endpoint: str) -> None:
    # Given a command whose profiles work but whose judge model (graded outside any profile) does not
    config = config_with_broken_profile(closed_endpoint)
    # When the check covers the judge too
    refusal = preflight(config, profiles=["other"], models=["remote"]).refusal
    # Then the judge's model is named
    assert refusal is not None and refusal.startswith("model 'remote' at http://127.0.0.1:")


def test_config_check_lists_every_profile_that_cannot_work(closed_endpoint: str) -> None:
    # Given a configuration with one profile on a closed endpoint
    config = config_with_broken_profile(closed_endpoint)
    # When every profile is checked (what `stepwise config check` reports)
    problems = profile_problems(config)
    # Then only that profile is listed, with its reason
    assert list(problems) == ["broken"] and "cannot be reached" in problems["broken"]
