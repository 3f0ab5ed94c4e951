"""samconfig.toml: `sam deploy` with no flags deploys this template with parameters it declares."""

from __future__ import annotations

import shlex
import tomllib
from typing import Any

import pytest

from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT


@pytest.fixture(scope="module")
def samconfig() -> dict[str, Any]:
    return tomllib.loads((PROJECT_ROOT / "samconfig.toml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def declared_parameters() -> dict[str, Any]:
    parameters: dict[str, Any] = SamTemplate.load(PROJECT_ROOT / "template.yaml").document["Parameters"]
    return parameters


def overrides(deploy: dict[str, Any]) -> dict[str, str]:
    pairs = (item.split("=", 1) for item in shlex.split(deploy["parameter_overrides"]))
    return {name: value for name, value in pairs}


@pytest.mark.parametrize("environment", ["default", "prod"])
def test_every_deploy_override_is_a_declared_parameter_with_an_allowed_value(
    samconfig: dict[str, Any], declared_parameters: dict[str, Any], environment: str
) -> None:
    # Given the deploy parameters of one samconfig environment
    deploy = samconfig[environment]["deploy"]["parameters"]

    # When its overrides are read as `sam deploy` reads them
    values = overrides(deploy)

    # Then each names a template parameter and, where the template lists the allowed values, one of them
    for name, value in values.items():
        assert name in declared_parameters, f"{environment}: {name} is not a template parameter"
        allowed = declared_parameters[name].get("AllowedValues")
        assert allowed is None or value in allowed, f"{environment}: {name}={value} is not one of {allowed}"


@pytest.mark.parametrize("environment", ["default", "prod"])
def test_a_deploy_needs_no_flags_beyond_the_environment(samconfig: dict[str, Any], environment: str) -> None:
    # Given the deploy parameters of one samconfig environment
    deploy = samconfig[environment]["deploy"]["parameters"]
    stack_name = deploy.get("stack_name") or samconfig["default"]["global"]["parameters"]["stack_name"]

    # Then the stack is named, IAM roles may be created and SAM finds its own artifact bucket
    assert stack_name
    assert "CAPABILITY_IAM" in deploy["capabilities"].split()
    assert deploy["resolve_s3"] is True
