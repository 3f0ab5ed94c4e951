"""template.yaml's resources as CloudFormation would render them for given parameters, for static tests.

Evaluates the intrinsic functions the template uses (Ref, Fn::Sub, Fn::Join, Fn::Split, Fn::Select, Fn::If
and the condition functions) against parameter values and a pseudo account and Region. No library renders
a SAM template's intrinsics offline (cfn-lint checks them, CloudFormation resolves them at deploy), hence
this small evaluator. `Fn::GetAtt` and a Ref to a resource are left as `<Logical.Attr>` placeholders.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from stepwise.local.template import SamTemplate

ACCOUNT = "123456789012"
# Step Functions' CloudWatch Logs delivery accepts no resource but "*" for these actions (AWS requires it).
LOG_DELIVERY_ACTIONS = [
    "logs:CreateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:DescribeLogGroups",
    "logs:DescribeResourcePolicies",
    "logs:GetLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:UpdateLogDelivery",
]
_SUB_VARIABLE = re.compile(r"\$\{([^}!]+)\}")
_NO_VALUE = object()


class Rendering:
    """One rendering of the template: its parameters (defaults overridden), Region and partition."""

    def __init__(
        self, template: SamTemplate, parameters: Mapping[str, str] | None = None, region: str = "us-east-1"
    ) -> None:
        document = template.document
        self._document = document
        self._parameters: dict[str, Any] = {
            name: spec.get("Default", "") for name, spec in document.get("Parameters", {}).items()
        }
        for name, value in (parameters or {}).items():
            self._parameters[name] = value
        for name, spec in document.get("Parameters", {}).items():
            if spec.get("Type") == "CommaDelimitedList" and isinstance(self._parameters[name], str):
                self._parameters[name] = self._parameters[name].split(",")
        self._pseudo = {
            "AWS::Region": region,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws-us-gov" if region.startswith("us-gov-") else "aws",
            "AWS::StackName": "stepwise",
            "AWS::URLSuffix": "amazonaws.com",
        }
        self._conditions: dict[str, bool] = {}

    def resource(self, logical_id: str) -> dict[str, Any]:
        """The resource with its properties rendered (a resource whose Condition is false raises KeyError)."""
        resource = self._document["Resources"][logical_id]
        if "Condition" in resource and not self.condition(resource["Condition"]):
            raise KeyError(f"{logical_id} is not created with these parameters")
        rendered: dict[str, Any] = self.value(resource)
        return rendered

    def condition(self, name: str) -> bool:
        """The named condition's value."""
        if name not in self._conditions:
            self._conditions[name] = self._truth(self._document["Conditions"][name])
        return self._conditions[name]

    def value(self, node: Any) -> Any:
        """`node` with every intrinsic function evaluated; AWS::NoValue removed."""
        rendered = self._value(node)
        return None if rendered is _NO_VALUE else rendered

    def _truth(self, node: Any) -> bool:
        if isinstance(node, dict) and len(node) == 1:
            ((name, argument),) = node.items()
            if name == "Condition":
                return self.condition(argument)
            if name == "Fn::Equals":
                left, right = (self._value(item) for item in argument)
                return bool(left == right)
            if name == "Fn::Not":
                return not self._truth(argument[0])
            if name == "Fn::Or":
                return any(self._truth(item) for item in argument)
            if name == "Fn::And":
                return all(self._truth(item) for item in argument)
        raise ValueError(f"not a condition: {node!r}")

    def _value(self, node: Any) -> Any:
        if isinstance(node, list):
            items = [self._value(item) for item in node]
            return [item for item in items if item is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((name, argument),) = node.items()
            if name == "Ref":
                return self._ref(argument)
            if name == "Fn::If":
                condition, when_true, when_false = argument
                return self._value(when_true if self.condition(condition) else when_false)
            if name == "Fn::Sub":
                return self._sub(argument)
            if name == "Fn::Join":
                separator, items = argument
                return separator.join(str(item) for item in self._value(items))
            if name == "Fn::Split":
                separator, text = argument
                return str(self._value(text)).split(separator)
            if name == "Fn::Select":
                index, items = argument
                return self._value(items)[int(self._value(index))]
            if name == "Fn::GetAtt":
                target = argument if isinstance(argument, str) else ".".join(argument)
                return f"<{target}>"
        rendered = {key: self._value(item) for key, item in node.items()}
        return {key: item for key, item in rendered.items() if item is not _NO_VALUE}

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name in self._pseudo:
            return self._pseudo[name]
        if name in self._parameters:
            return self._parameters[name]
        return f"<{name}>"

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        values = {name: self._value(value) for name, value in variables.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in values:
                return str(values[name])
            if "." in name:
                return f"<{name}>"
            return str(self._ref(name))

        return _SUB_VARIABLE.sub(replace, text)


def statements(policy_document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A rendered policy document's statements."""
    found = policy_document.get("Statement", [])
    return list(found) if isinstance(found, list) else [found]


def rendered_definition(template: SamTemplate, workflow_type: str = "STANDARD") -> dict[str, Any]:
    """The state machine's definition as CloudFormation substitutes it for `workflow_type`: texts chosen on
    the workflow type as written, each function reference as its `<Logical.Arn>` placeholder."""

    def resolve(value: Any) -> str:
        literal = template.literal_substitution(value, {"WorkflowType": workflow_type})
        if literal is not None:
            return literal
        logical_id = template.function_for_reference(value)
        return f"<{logical_id}.Arn>"

    return template.render_definition(template.state_machine(), resolve)
