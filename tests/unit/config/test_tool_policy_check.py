"""`stepwise config check` on a profile's tool policy: it refuses one that does not parse (naming the file and
line) or does not validate against the schema generated from the profile's tools, and warns about a tool
no permit can reach."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepwise.config.check import check_config_file
from stepwise.errors import ConfigError
from tests.conftest import PROJECT_ROOT

SCRIPTED = {"provider": "scripted", "scenarios": [{"turns": [{"content": "done"}]}]}
TRANSFER = {
    "toolName": "transfer",
    "method": "POST",
    "path": "/transfer",
    "parameter": {
        "type": "object",
        "properties": {
            "amount": {"type": "integer"},
            "to": {"type": "string"},
            "memo": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["amount", "to"],
    },
}
PERMIT_SMALL = """@id("small")
permit(principal, action, resource == Stepwise::Tool::"transfer")
when { context.arguments.amount <= 100 && context.spent.usd.lessThan(decimal("2.5")) };
"""


def write_config(directory: Path, policy: str, **profile: Any) -> Path:
    """A configuration whose profile has `transfer` and the calculator, under `policy`."""
    config = {
        "models": {"m": SCRIPTED},
        "tools": {
            "apis": [{"url": "http://127.0.0.1:9", "internal": True, "tools": [TRANSFER]}],
            "builtin": ["calculator"],
        },
        "profiles": {"default": {"model": "m", "policy": policy, **profile}},
    }
    path = directory / "stepwise.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_a_policy_that_does_not_parse_is_refused_naming_its_file_and_line(tmp_path: Path) -> None:
    # Given a policy file whose second statement, on line 5, is broken
    (tmp_path / "payments.cedar").write_text(
        PERMIT_SMALL + '\n@id("broken")\nforbid(principal, action, resource) when { context.iteration < };\n',
        encoding="utf-8",
    )
    # When the configuration is checked
    with pytest.raises(ConfigError) as refused:
        check_config_file(write_config(tmp_path, "payments.cedar"))
    # Then the error names the file and the line of the broken statement
    assert f"{tmp_path / 'payments.cedar'}: line 5: does not parse" in str(refused.value)


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        pytest.param(
            '@id("typo") permit(principal, action, resource == Stepwise::Tool::"transfer") '
            'when { context.arguments.amount == "100" };',
            "policy `typo`: the types Long and String are not compatible",
            id="an argument compared with a value of another type",
        ),
        pytest.param(
            '@id("ghost") permit(principal, action, resource == Stepwise::Tool::"wire");',
            'policy `ghost`: entity `Stepwise::Tool::"wire"` is of an enumerated entity type',
            id="a tool the profile does not have",
        ),
        pytest.param(
            '@id("unguarded") forbid(principal, action, resource) when { context.arguments.amount > 5 };',
            "policy `unguarded`",
            id="an argument read without `has` by a policy of every tool",
        ),
    ],
)
def test_a_policy_that_does_not_validate_against_the_tools_is_refused(
    tmp_path: Path, statement: str, problem: str
) -> None:
    # Given an inline policy with a statement the profile's tools' schema does not allow
    path = write_config(tmp_path, PERMIT_SMALL + statement)
    # When the configuration is checked
    with pytest.raises(ConfigError) as refused:
        check_config_file(path)
    # Then it is refused, naming the policy and the reason
    assert "does not validate against the profile's tools" in str(refused.value)
    assert problem in str(refused.value)


def test_a_tool_no_permit_can_reach_is_a_warning(tmp_path: Path) -> None:
    # Given a policy that permits transfers only, and one of every tool guarded by `has`
    guarded = (
        '@id("cap") forbid(principal, action, resource) '
        "when { context.arguments has amount && context.arguments.amount > 1000 };"
    )
    # When the configuration is checked
    report = check_config_file(write_config(tmp_path, PERMIT_SMALL + guarded))
    # Then it is valid, and the calculator is named as unreachable
    assert report.warnings == ["profiles.default.policy: tool calculator: no permit of the policy can ever reach it"]


def test_a_policy_reading_an_argument_cedar_cannot_type_is_noted_not_refused(tmp_path: Path) -> None:
    # Given a permit of every tool, one of whose policies reads `memo` (a union type, which Cedar cannot express)
    policy = (
        '@id("all") permit(principal, action, resource);\n'
        '@id("memo") forbid(principal, action, resource == Stepwise::Tool::"transfer") '
        'when { context.arguments.memo == "x" };'
    )
    # When the configuration is checked
    report = check_config_file(write_config(tmp_path, policy))
    # Then it is valid, with a note that the policy was not validated
    assert report.warnings == [
        "profiles.default.policy: policy `memo`: not validated: "
        "it reads an argument whose JSON schema Cedar cannot type"
    ]


def test_the_documented_example_policy_validates_and_reaches_every_tool(tmp_path: Path) -> None:
    # Given docs/payments.cedar, the example of docs/tools.md, named as a file beside the configuration
    shutil.copy(PROJECT_ROOT / "docs" / "payments.cedar", tmp_path)
    # When the configuration is checked
    report = check_config_file(write_config(tmp_path, "payments.cedar"))
    # Then it is valid and no tool is out of reach
    assert report.warnings == []
