"""`stepwise config check` on a tool policy: where it fails to parse, whether it validates against the
schema generated from the profile's tools, and which tools no `permit` can reach.

The schema (`policy_schema`) declares `Stepwise::Caller`, `Stepwise::Tool` (an enumerated type: the
profile's tool names), and the action `call_tool` whose context is `{arguments, profile: String,
iteration: Long, spent: {tokens: Long, usd: decimal}}`. Cedar types a context per action, not per
resource, so each policy is validated against the arguments of the tools it can apply to: one whose scope
names a tool (`resource == Stepwise::Tool::"transfer"`) against that tool's arguments, typed and required
as its JSON schema says; any other against every tool's arguments at once, each optional (such a policy
tests `context.arguments has amount` before it reads it). An argument Cedar cannot type (see
`stepwise.governance.cedar_values`) is left out; a policy reading it gets a note, not a refusal.

Reachability is a static approximation from each policy's scope: a tool is reachable when a `permit`
whose scope covers it and whose condition is not the literal `false` exists, and no `forbid` covering it
has no condition and applies to every caller. Conditions are not otherwise evaluated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import cedarpy

from stepwise.governance.cedar_values import record_type, untyped_arguments
from stepwise.governance.tool_policy import ACTION, NAMESPACE
from stepwise.models.messages import ToolSpec

_TOOL_TYPE = f"{NAMESPACE}::Tool"


def _statements(text: str) -> list[tuple[int, str]]:
    """The policy's statements (each up to its `;`) with the line each starts on. Strings and `//`
    comments are skipped over, so a `;` inside them does not end a statement."""
    statements: list[tuple[int, str]] = []
    start, line, start_line, index = 0, 1, None, 0
    in_string = False
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif text.startswith("//", index):
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
            continue
        elif char == '"':
            in_string = True
        elif char == ";":
            statements.append((start_line or line, text[start : index + 1]))
            start, start_line = index + 1, None
        if char == "\n":
            line += 1
        elif start_line is None and not char.isspace() and not in_string and char != ";":
            start_line = line
        index += 1
    if start_line is not None:
        statements.append((start_line, text[start:]))
    return statements


def parse_problem(text: str, error: Exception) -> str:
    """Where and why the policy does not parse. Cedar's parse errors carry no position through cedarpy,
    so each statement is parsed alone to find the first that fails."""
    for line, statement in _statements(text):
        try:
            cedarpy.policies_to_json_str(statement)
        except ValueError as exc:
            return f"line {line}: does not parse: {exc}"
    return f"does not parse: {error}"


@dataclass(frozen=True)
class _Policy:
    cedar_id: str
    name: str
    effect: str
    tools: frozenset[str] | None  # None: every tool
    action_matches: bool
    every_caller: bool
    unconditional: bool
    never: bool


def _scoped_tools(resource: dict[str, Any]) -> frozenset[str] | None:
    """The tools a resource scope names; None when it covers every tool."""
    entity = resource.get("entity") if resource.get("op") in ("==", "in") else (resource.get("in") or {}).get("entity")
    if isinstance(entity, dict) and entity.get("type") == _TOOL_TYPE:
        return frozenset([entity["id"]])
    return None


def _action_matches(action: dict[str, Any]) -> bool:
    if action.get("op") == "All":
        return True
    entities = action.get("entities") or [action.get("entity")]
    return any(entity == ACTION for entity in entities)


def _policies(document: dict[str, Any]) -> list[_Policy]:
    found: list[_Policy] = []
    for cedar_id, policy in document["staticPolicies"].items():
        conditions = policy.get("conditions") or []
        never = any(condition.get("body") == {"Value": condition.get("kind") != "when"} for condition in conditions)
        found.append(
            _Policy(
                cedar_id=cedar_id,
                name=(policy.get("annotations") or {}).get("id") or cedar_id,
                effect=policy["effect"],
                tools=_scoped_tools(policy["resource"]),
                action_matches=_action_matches(policy["action"]),
                every_caller=policy["principal"].get("op") == "All",
                unconditional=not conditions,
                never=never,
            )
        )
    return found


def policy_schema(arguments: dict[str, Any], tools: list[str]) -> dict[str, Any]:
    """The Cedar schema (JSON form) of a call whose `context.arguments` has the record type `arguments`."""
    context = {
        "type": "Record",
        "attributes": {
            "arguments": arguments,
            "profile": {"type": "String"},
            "iteration": {"type": "Long"},
            "spent": {
                "type": "Record",
                "attributes": {"tokens": {"type": "Long"}, "usd": {"type": "Extension", "name": "decimal"}},
            },
        },
    }
    return {
        NAMESPACE: {
            "entityTypes": {"Caller": {}, "Tool": {"enum": tools} if tools else {}},
            "actions": {
                "call_tool": {
                    "appliesTo": {"principalTypes": ["Caller"], "resourceTypes": ["Tool"], "context": context}
                }
            },
        }
    }


def _every_tools_arguments(specs: list[ToolSpec]) -> tuple[dict[str, Any], set[str]]:
    """One record of every tool's arguments, each optional; a name two tools type differently is left out."""
    attributes: dict[str, Any] = {}
    clashing: set[str] = set()
    for spec in specs:
        for name, typed in record_type(spec.parameters, optional=True)["attributes"].items():
            if name in attributes and attributes[name] != typed:
                clashing.add(name)
            attributes.setdefault(name, typed)
    for name in clashing:
        attributes.pop(name)
    untyped = clashing.union(*(untyped_arguments(spec.parameters) for spec in specs))
    return {"type": "Record", "attributes": attributes}, untyped


def _validate(
    text: str, schema: dict[str, Any], policies: dict[str, _Policy], untyped: set[str]
) -> tuple[list[str], list[str]]:
    """Cedar's validation of the policies in `policies` against `schema`: problems, and notes for what
    reads an argument the schema could not type."""
    result = cedarpy.validate_policies(text, schema)
    problems: list[str] = []
    notes: list[str] = []
    for error in result.errors:
        policy = policies.get(error.policy_id)
        if error.policy_id and policy is None:
            continue
        where = f"policy `{policy.name}`: " if policy is not None else ""
        # Cedar names the policy by its own id ("for policy `policy1`, ..."); the name above replaces it
        text = re.sub(r"^for policy `[^`]*`[,:]? ?", "", error.error)
        if any(f"`arguments.{name}`" in text for name in untyped):
            notes.append(f"{where}not validated: it reads an argument whose JSON schema Cedar cannot type")
        else:
            problems.append(f"{where}{text}")
    return problems, notes


def check_policy_text(text: str, specs: list[ToolSpec]) -> tuple[list[str], list[str]]:
    """Validate a parsed policy against the profile's tools: (problems, warnings and notes)."""
    document = json.loads(cedarpy.policies_to_json_str(text))
    if document.get("templates"):
        return ["policy templates (with ?principal or ?resource) are not supported: write static policies"], []
    policies = _policies(document)
    names = [spec.name for spec in specs]
    problems: list[str] = []
    warnings: list[str] = []
    for spec in specs:
        scoped = {policy.cedar_id: policy for policy in policies if policy.tools == frozenset([spec.name])}
        if scoped:
            schema = policy_schema(record_type(spec.parameters), names)
            found, notes = _validate(text, schema, scoped, set(untyped_arguments(spec.parameters)))
            problems += found
            warnings += notes
    others = {policy.cedar_id: policy for policy in policies if policy.tools is None or not policy.tools <= set(names)}
    arguments, untyped = _every_tools_arguments(specs)
    found, notes = _validate(text, policy_schema(arguments, names), others, untyped)
    problems += found
    warnings += notes
    warnings += [
        f"tool {name}: no permit of the policy can ever reach it" for name in unreachable_tools(policies, names)
    ]
    return problems, warnings


def unreachable_tools(policies: list[_Policy], tools: list[str]) -> list[str]:
    """The tools no `permit` can reach (see the module's docstring for the approximation)."""

    def covers(policy: _Policy, tool: str) -> bool:
        return policy.action_matches and (policy.tools is None or tool in policy.tools)

    unreachable = []
    for tool in tools:
        permitted = any(p.effect == "permit" and covers(p, tool) and not p.never for p in policies)
        blocked = any(p.effect == "forbid" and covers(p, tool) and p.unconditional and p.every_caller for p in policies)
        if blocked or not permitted:
            unreachable.append(tool)
    return unreachable
