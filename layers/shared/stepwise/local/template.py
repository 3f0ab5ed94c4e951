"""Reading a SAM template: its functions, with `Globals.Function` merged in, and its state machines.

CloudFormation short-form tags (`!Ref`, `!GetAtt`, `!Sub`, ...) are read as their long form
(`{"Ref": ...}`, `{"Fn::GetAtt": [...]}`, `{"Fn::Sub": ...}`); nothing is evaluated except a `Ref` to
a template parameter with a Default in the few scalar properties the local runtime needs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepwise.inputs.validation_problems import describe_problems
from stepwise.local.asl.errors import AslDefinitionError


class TemplateError(ValueError):
    """The template cannot be read; the message names the resource, the property and the reason."""


class FunctionDefinition(BaseModel):
    """An `AWS::Serverless::Function`, Globals merged. Environment values may be intrinsic dicts."""

    logical_id: str
    code_uri: Path
    handler: str
    environment: dict[str, Any] = {}
    timeout: int | None = None
    memory_size: int | None = None


class StateMachineDefinition(BaseModel):
    """An `AWS::Serverless::StateMachine` whose definition is in a file (`DefinitionUri`)."""

    logical_id: str
    definition_path: Path
    substitutions: dict[str, Any] = {}


class _FunctionProperties(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    code_uri: str = Field(alias="CodeUri")
    handler: str = Field(alias="Handler")
    environment: dict[str, Any] = Field(default_factory=dict, alias="Environment")
    timeout: int | None = Field(None, alias="Timeout", ge=1)
    memory_size: int | None = Field(None, alias="MemorySize", ge=128)


class _StateMachineProperties(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    definition_uri: str = Field(alias="DefinitionUri")
    definition_substitutions: dict[str, Any] = Field(default_factory=dict, alias="DefinitionSubstitutions")


_SHORT_TAGS = {
    "Ref": "Ref", "Condition": "Condition", "GetAtt": "Fn::GetAtt", "Sub": "Fn::Sub", "If": "Fn::If",
    "Equals": "Fn::Equals", "Not": "Fn::Not", "And": "Fn::And", "Or": "Fn::Or", "Select": "Fn::Select",
    "Join": "Fn::Join", "FindInMap": "Fn::FindInMap", "ImportValue": "Fn::ImportValue",
    "Split": "Fn::Split", "Base64": "Fn::Base64", "GetAZs": "Fn::GetAZs", "Cidr": "Fn::Cidr",
    "Transform": "Fn::Transform", "Length": "Fn::Length", "ToJsonString": "Fn::ToJsonString",
}  # fmt: skip
_SUBSTITUTION = re.compile(r"\$\{([^}]+)\}")


# libyaml's parser where PyYAML has it: template.yaml parses in 0.01 s of CPU instead of 0.09 s, which every
# local command pays before its first step (bench/first_step.py).
_YAML_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _TemplateLoader(_YAML_BASE):  # type: ignore[valid-type,misc]
    """A safe YAML loader that also reads CloudFormation short-form tags."""


def _long_form(name: str) -> Callable[[yaml.SafeLoader, yaml.Node], dict[str, Any]]:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        value: Any
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            assert isinstance(node, yaml.MappingNode)
            value = loader.construct_mapping(node, deep=True)
        if name == "Fn::GetAtt" and isinstance(value, str):
            # CloudFormation reads `!GetAtt Resource.Attribute` as [Resource, Attribute].
            value = value.split(".", 1)
        return {name: value}

    return construct


for _tag, _name in _SHORT_TAGS.items():
    _TemplateLoader.add_constructor(f"!{_tag}", _long_form(_name))


def _merge_globals(global_value: Any, own_value: Any) -> Any:
    """SAM's Globals rule: maps merge (the function wins), lists concatenate, scalars are replaced."""
    if isinstance(global_value, dict) and isinstance(own_value, dict):
        merged = dict(global_value)
        for key, value in own_value.items():
            merged[key] = _merge_globals(global_value[key], value) if key in global_value else value
        return merged
    if isinstance(global_value, list) and isinstance(own_value, list):
        return global_value + own_value
    return own_value


class SamTemplate:
    """A parsed SAM template: `functions` and `state_machines` by logical id; `document` is the whole
    template as loaded (short-form tags in their long form)."""

    def __init__(
        self,
        path: Path,
        document: dict[str, Any],
        functions: dict[str, FunctionDefinition],
        state_machines: dict[str, StateMachineDefinition],
    ) -> None:
        self.path = path
        self.document = document
        self.functions = functions
        self.state_machines = state_machines

    @classmethod
    def load(cls, path: Path) -> SamTemplate:
        """Read and validate `template.yaml`; relative paths in it are resolved from its folder."""
        path = Path(path).resolve()
        try:
            # _TemplateLoader is a SafeLoader: no arbitrary Python objects are built.
            document = yaml.load(path.read_text(encoding="utf-8"), Loader=_TemplateLoader)
        except (OSError, yaml.YAMLError) as exc:
            raise TemplateError(f"{path}: cannot be read as YAML: {exc}") from None
        if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
            raise TemplateError(f"{path}: a template needs a Resources mapping")
        parameters = document.get("Parameters") or {}
        function_globals = (document.get("Globals") or {}).get("Function") or {}
        functions: dict[str, FunctionDefinition] = {}
        state_machines: dict[str, StateMachineDefinition] = {}
        for logical_id, resource in document["Resources"].items():
            kind = resource.get("Type") if isinstance(resource, dict) else None
            properties = (resource.get("Properties") or {}) if isinstance(resource, dict) else {}
            if kind == "AWS::Serverless::Function":
                merged = _merge_globals(function_globals, properties)
                functions[logical_id] = _function(logical_id, merged, parameters, path.parent)
            elif kind == "AWS::Serverless::StateMachine":
                state_machines[logical_id] = _state_machine(logical_id, properties, path.parent)
        return cls(path, document, functions, state_machines)

    def state_machine(self, logical_id: str | None = None) -> StateMachineDefinition:
        """The state machine called `logical_id`, or the only one when None."""
        if logical_id is None:
            if len(self.state_machines) != 1:
                raise TemplateError(
                    f"{self.path}: name a state machine, there are {len(self.state_machines)}: "
                    f"{sorted(self.state_machines)}"
                )
            return next(iter(self.state_machines.values()))
        if logical_id not in self.state_machines:
            raise TemplateError(f"{self.path}: no state machine {logical_id!r}; have {sorted(self.state_machines)}")
        return self.state_machines[logical_id]

    def render_definition(self, state_machine: StateMachineDefinition, resolve: Callable[[Any], str]) -> dict[str, Any]:
        """The definition with every `${Name}` replaced by `resolve(substitutions[Name])`.

        A `${Name}` with no DefinitionSubstitutions entry is an `AslDefinitionError` naming it.
        """
        source = state_machine.definition_path
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise AslDefinitionError(f"{source}: cannot be read: {exc}") from None

        def replacement(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in state_machine.substitutions:
                raise AslDefinitionError(
                    f"{source}: ${{{name}}} has no entry in DefinitionSubstitutions of {state_machine.logical_id}"
                )
            return resolve(state_machine.substitutions[name])

        # CloudFormation substitutes in the text, before parsing: `"MaxConcurrency": ${Limit}` is allowed.
        rendered = _SUBSTITUTION.sub(replacement, text)
        try:
            document = yaml.safe_load(rendered) if source.suffix in (".yaml", ".yml") else json.loads(rendered)
        except (ValueError, yaml.YAMLError) as exc:
            raise AslDefinitionError(f"{source}: not valid once substituted: {exc}") from None
        if not isinstance(document, dict):
            raise AslDefinitionError(f"{source}: the definition must be a JSON object")
        return document

    def condition(self, name: str, parameters: Mapping[str, str]) -> bool:
        """Whether the condition `name` holds for these parameter values (others take their Default).

        Only `!Equals [!Ref Parameter, value]` is understood; anything else is a `TemplateError`.
        """
        definition = (self.document.get("Conditions") or {}).get(name)
        operands = definition.get("Fn::Equals") if isinstance(definition, dict) else None
        if not isinstance(operands, list) or len(operands) != 2 or not isinstance(operands[0], dict):
            raise TemplateError(f"{self.path}: condition {name!r} is not an !Equals [!Ref Parameter, value]")
        parameter = operands[0].get("Ref")
        declared = (self.document.get("Parameters") or {}).get(parameter) or {}
        value = parameters.get(str(parameter), declared.get("Default"))
        return str(value) == str(operands[1])

    def literal_substitution(self, value: Any, parameters: Mapping[str, str]) -> str | None:
        """A DefinitionSubstitutions value that is text, not a function: a string, or an `!If` on a
        condition of `parameters` choosing one; None for anything else (a function reference)."""
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and set(value) == {"Fn::If"}:
            condition, when_true, when_false = value["Fn::If"]
            return self.literal_substitution(
                when_true if self.condition(condition, parameters) else when_false, parameters
            )
        return None

    def function_for_reference(self, value: Any) -> str | None:
        """The logical id of the function that `value` refers to, or None.

        Understands `{"Fn::GetAtt": ["F", "Arn"]}`, `{"Fn::GetAtt": "F.Arn"}`, `{"Ref": "F"}` and
        `{"Fn::Sub": "${F.Arn}"}`.
        """
        if not isinstance(value, dict) or len(value) != 1:
            return None
        ((key, target),) = value.items()
        logical_id: Any = None
        if key == "Ref":
            logical_id = target
        elif key == "Fn::GetAtt":
            logical_id = target[0] if isinstance(target, list) and target else target
            logical_id = logical_id.split(".", 1)[0] if isinstance(logical_id, str) else None
        elif key == "Fn::Sub" and isinstance(target, str):
            match = re.fullmatch(r"\$\{([A-Za-z0-9]+)(\.Arn)?\}", target)
            logical_id = match.group(1) if match else None
        return logical_id if isinstance(logical_id, str) and logical_id in self.functions else None


def _parameter_default(value: Any, parameters: dict[str, Any]) -> Any:
    """A `Ref` to a template parameter becomes its Default (the value a plain deploy would use)."""
    if isinstance(value, dict) and set(value) == {"Ref"}:
        parameter = parameters.get(value["Ref"])
        if isinstance(parameter, dict) and "Default" in parameter:
            return parameter["Default"]
    return value


def _function(
    logical_id: str, properties: dict[str, Any], parameters: dict[str, Any], base: Path
) -> FunctionDefinition:
    resolved = dict(properties)
    for key in ("CodeUri", "Handler", "Timeout", "MemorySize"):
        if key in resolved:
            resolved[key] = _parameter_default(resolved[key], parameters)
    try:
        fields = _FunctionProperties.model_validate(resolved)
    except ValidationError as exc:
        raise TemplateError(f"function {logical_id}: {describe_problems(exc, top_level='')}") from None
    variables = fields.environment.get("Variables") or {}
    if not isinstance(variables, dict):
        raise TemplateError(f"function {logical_id}: Environment.Variables must be a mapping")
    return FunctionDefinition(
        logical_id=logical_id,
        code_uri=(base / fields.code_uri).resolve(),
        handler=fields.handler,
        environment=variables,
        timeout=fields.timeout,
        memory_size=fields.memory_size,
    )


def _state_machine(logical_id: str, properties: dict[str, Any], base: Path) -> StateMachineDefinition:
    if "Definition" in properties:
        raise TemplateError(f"state machine {logical_id}: an inline Definition is not supported; use DefinitionUri")
    try:
        fields = _StateMachineProperties.model_validate(properties)
    except ValidationError as exc:
        raise TemplateError(f"state machine {logical_id}: {describe_problems(exc, top_level='')}") from None
    return StateMachineDefinition(
        logical_id=logical_id,
        definition_path=(base / fields.definition_uri).resolve(),
        substitutions=fields.definition_substitutions,
    )
