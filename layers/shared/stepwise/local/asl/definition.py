"""Loading an ASL definition: validate every state and compile its paths, templates and rules.

Whatever the engine cannot run faithfully is refused here, with the state's name and the reason:
Parallel and unknown state types, JSONata, fields the engine does not implement, unknown fields,
unknown intrinsics, transitions to missing states, unreachable states and unsupported resources.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, ValidationError, model_validator

from stepwise.local.asl.choice import ChoiceBranch, compile_branches
from stepwise.local.asl.errors import AslDefinitionError, AslUnsupportedError
from stepwise.local.asl.fields import (
    ROOT_PATH,
    AslModel,
    Catcher,
    DataPath,
    Dynamic,
    ReferencePath,
    Retrier,
    Template,
    check_query_language,
    check_timestamp,
    definition_error,
    required_reference_path,
)
from stepwise.local.asl.paths import JsonPath
from stepwise.local.asl.templates import PayloadTemplate

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
LAMBDA_INVOKE_WAIT = LAMBDA_INVOKE + ".waitForTaskToken"
TASK_TOKEN_PATH = "$$.Task.Token"
_LAMBDA_PARAMETERS = {"FunctionName", "Payload", "Qualifier", "InvocationType", "ClientContext", "LogType"}
# Fields AWS accepts that this engine does not implement: refused by name rather than ignored.
_UNSUPPORTED_FIELDS = {
    "Arguments", "Output", "Assign", "Credentials", "ItemReader", "ResultWriter", "ItemBatcher",
    "ToleratedFailurePercentage", "ToleratedFailurePercentagePath", "ToleratedFailureCount",
    "ToleratedFailureCountPath", "Label", "Items", "Branches",
}  # fmt: skip


def _processor(value: Any) -> StateSet:
    if not isinstance(value, dict):
        raise AslDefinitionError("must be a JSON object with StartAt and States")
    body = dict(value)
    config = body.pop("ProcessorConfig", None) or {}
    if not isinstance(config, dict):
        raise AslDefinitionError("ProcessorConfig must be a JSON object")
    if config.get("Mode", "INLINE") != "INLINE":
        raise AslUnsupportedError(f"ProcessorConfig Mode {config['Mode']!r} is not supported; only INLINE")
    if set(config) - {"Mode"}:
        raise AslUnsupportedError(f"ProcessorConfig fields {sorted(set(config) - {'Mode'})} are not supported")
    return load_state_set(body)


_Processor = Annotated["StateSet | None", PlainValidator(_processor)]


class _State(AslModel):
    comment: str | None = None
    query_language: Annotated[str | None, PlainValidator(check_query_language)] = None

    def transitions(self) -> list[str]:
        """The names of the states this state can go to."""
        return []


class _WithPaths(_State):
    input_path: DataPath = ROOT_PATH
    output_path: DataPath = ROOT_PATH


class _Flowing(_WithPaths):
    next: str | None = None
    end: bool | None = None

    @model_validator(mode="after")
    def _next_or_end(self) -> _Flowing:
        if (self.next is None) == (self.end is not True):
            raise AslDefinitionError("needs exactly one of 'Next' or 'End: true'")
        return self

    def transitions(self) -> list[str]:
        return [self.next] if self.next else []


class _Recoverable(_Flowing):
    result_selector: Template = None
    result_path: ReferencePath = ROOT_PATH
    retry: list[Retrier] = []
    catch: list[Catcher] = []

    @model_validator(mode="after")
    def _states_all_last(self) -> _Recoverable:
        error_lists = {
            "Retry": [entry.error_equals for entry in self.retry],
            "Catch": [entry.error_equals for entry in self.catch],
        }
        for field, entries in error_lists.items():
            for index, names in enumerate(entries):
                if "States.ALL" in names and (len(names) > 1 or index != len(entries) - 1):
                    raise AslDefinitionError(f"{field}[{index}]: States.ALL must be alone and in the last entry")
        return self

    def transitions(self) -> list[str]:
        return super().transitions() + [catcher.next for catcher in self.catch]


class TaskState(_Recoverable):
    """A Task state: the optimised Lambda integration, request-response (`lambda:invoke`) or callback
    (`lambda:invoke.waitForTaskToken`, which waits for SendTaskSuccess or SendTaskFailure)."""

    type: Literal["Task"]
    resource: str
    parameters: Template = None
    timeout_seconds: int | None = Field(None, ge=1)
    timeout_seconds_path: ReferencePath = None
    heartbeat_seconds: int | None = Field(None, ge=1)
    heartbeat_seconds_path: ReferencePath = None

    @property
    def waits_for_token(self) -> bool:
        """True for the callback pattern: the task ends when its token is answered, not when it returns."""
        return self.resource == LAMBDA_INVOKE_WAIT

    @model_validator(mode="before")
    @classmethod
    def _lambda_invoke_only(cls, raw: Any) -> Any:
        resource = raw.get("Resource") if isinstance(raw, dict) else None
        if resource is None:
            return raw
        if resource not in (LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT):
            raise AslUnsupportedError(
                f"Resource {resource!r} is not supported; only {LAMBDA_INVOKE} and {LAMBDA_INVOKE_WAIT}"
            )
        parameters = raw.get("Parameters")
        keys = {key.removesuffix(".$") for key in parameters} if isinstance(parameters, dict) else set()
        if "FunctionName" not in keys:
            raise AslDefinitionError("Parameters.FunctionName is required for lambda:invoke")
        unknown = sorted(keys - _LAMBDA_PARAMETERS)
        if unknown:
            raise AslDefinitionError(f"Parameters has fields lambda:invoke does not take: {unknown}")
        assert isinstance(parameters, dict)  # it has a FunctionName key
        if "InvocationType.$" in parameters or parameters.get("InvocationType", "RequestResponse") != (
            "RequestResponse"
        ):
            raise AslUnsupportedError("only InvocationType RequestResponse is supported")
        if resource == LAMBDA_INVOKE_WAIT and TASK_TOKEN_PATH not in json.dumps(parameters):
            # as Step Functions refuses it: nobody could ever answer the task
            raise AslDefinitionError(f"a .waitForTaskToken task must pass {TASK_TOKEN_PATH} in its Parameters")
        heartbeat = {"HeartbeatSeconds", "HeartbeatSecondsPath"} & set(raw)
        if heartbeat and resource != LAMBDA_INVOKE_WAIT:
            raise AslUnsupportedError(f"{sorted(heartbeat)[0]} is supported on .waitForTaskToken tasks only")
        return raw

    @model_validator(mode="after")
    def _one_of_each_timeout(self) -> TaskState:
        if self.timeout_seconds is not None and self.timeout_seconds_path is not None:
            raise AslDefinitionError("give TimeoutSeconds or TimeoutSecondsPath, not both")
        if self.heartbeat_seconds is not None and self.heartbeat_seconds_path is not None:
            raise AslDefinitionError("give HeartbeatSeconds or HeartbeatSecondsPath, not both")
        if (
            self.heartbeat_seconds is not None
            and self.timeout_seconds is not None
            and self.heartbeat_seconds >= self.timeout_seconds
        ):
            raise AslDefinitionError("HeartbeatSeconds must be smaller than TimeoutSeconds")
        return self


class MapState(_Recoverable):
    """An inline Map state (`Iterator`, or `ItemProcessor` in INLINE mode)."""

    type: Literal["Map"]
    items_path: Annotated[JsonPath, PlainValidator(required_reference_path)] = ROOT_PATH
    item_selector: Template = None
    parameters: Template = None
    iterator: _Processor = None
    item_processor: _Processor = None
    max_concurrency: int = Field(0, ge=0)
    max_concurrency_path: ReferencePath = None

    @model_validator(mode="after")
    def _one_processor(self) -> MapState:
        if (self.iterator is None) == (self.item_processor is None):
            raise AslDefinitionError("needs exactly one of 'ItemProcessor' or 'Iterator'")
        if self.item_selector is not None and self.parameters is not None:
            raise AslDefinitionError("give 'ItemSelector' or its legacy name 'Parameters', not both")
        if "max_concurrency" in self.model_fields_set and self.max_concurrency_path is not None:
            raise AslDefinitionError("give MaxConcurrency or MaxConcurrencyPath, not both")
        return self

    @property
    def processor(self) -> StateSet:
        """The states run for each item."""
        processor = self.item_processor or self.iterator
        assert processor is not None  # guaranteed by _one_processor
        return processor

    @property
    def selector(self) -> PayloadTemplate | None:
        """The template that builds each item's input, if any."""
        return self.item_selector or self.parameters


class ChoiceState(_WithPaths):
    """A Choice state."""

    type: Literal["Choice"]
    choices: Annotated[tuple[ChoiceBranch, ...], PlainValidator(compile_branches)]
    default: str | None = None

    def transitions(self) -> list[str]:
        return [branch.next for branch in self.choices] + ([self.default] if self.default else [])


class PassState(_Flowing):
    """A Pass state."""

    type: Literal["Pass"]
    parameters: Template = None
    result: Any = None
    result_path: ReferencePath = ROOT_PATH

    @property
    def has_result(self) -> bool:
        """Whether `Result` was given (it may be given as null)."""
        return "result" in self.model_fields_set


class WaitState(_Flowing):
    """A Wait state."""

    type: Literal["Wait"]
    seconds: int | None = Field(None, ge=0)
    seconds_path: ReferencePath = None
    timestamp: Annotated[str | None, PlainValidator(check_timestamp)] = None
    timestamp_path: ReferencePath = None

    @model_validator(mode="after")
    def _one_duration(self) -> WaitState:
        given = [self.seconds, self.seconds_path, self.timestamp, self.timestamp_path]
        if sum(value is not None for value in given) != 1:
            raise AslDefinitionError("needs exactly one of Seconds, SecondsPath, Timestamp, TimestampPath")
        return self


class SucceedState(_WithPaths):
    """A Succeed state."""

    type: Literal["Succeed"]


class FailState(_State):
    """A Fail state."""

    type: Literal["Fail"]
    error: str | None = None
    cause: str | None = None
    error_path: Dynamic = None
    cause_path: Dynamic = None

    @model_validator(mode="after")
    def _literal_or_path(self) -> FailState:
        if self.error is not None and self.error_path is not None:
            raise AslDefinitionError("give Error or ErrorPath, not both")
        if self.cause is not None and self.cause_path is not None:
            raise AslDefinitionError("give Cause or CausePath, not both")
        return self


State = TaskState | ChoiceState | MapState | PassState | WaitState | SucceedState | FailState
_STATE_TYPES: dict[str, type[State]] = {
    "Task": TaskState, "Choice": ChoiceState, "Map": MapState, "Pass": PassState,
    "Wait": WaitState, "Succeed": SucceedState, "Fail": FailState,
}  # fmt: skip


@dataclass(frozen=True)
class StateSet:
    """A set of states and where to start: the whole machine, or the body of a Map."""

    start_at: str
    states: Mapping[str, State]


@dataclass(frozen=True)
class MachineDefinition:
    """A validated state machine definition."""

    states: StateSet
    timeout_seconds: int | None


class _StateSetFields(AslModel):
    start_at: str
    states: dict[str, Any] = Field(min_length=1)
    comment: str | None = None


class _MachineFields(_StateSetFields):
    version: str | None = None
    timeout_seconds: int | None = Field(None, ge=1)
    query_language: Annotated[str | None, PlainValidator(check_query_language)] = None


def load_definition(definition: Mapping[str, Any] | str) -> MachineDefinition:
    """Validate and compile a whole definition (a JSON object, or its text)."""
    if isinstance(definition, str):
        try:
            definition = json.loads(definition)
        except json.JSONDecodeError as exc:
            raise AslDefinitionError(f"the definition is not JSON: {exc}") from None
    if not isinstance(definition, Mapping):
        raise AslDefinitionError("the definition must be a JSON object")
    try:
        fields = _MachineFields.model_validate(dict(definition))
    except ValidationError as exc:
        raise definition_error(exc, state=None) from None
    body = {"StartAt": fields.start_at, "States": fields.states}
    return MachineDefinition(states=load_state_set(body), timeout_seconds=fields.timeout_seconds)


def load_state_set(raw: Mapping[str, Any]) -> StateSet:
    """Validate and compile `{"StartAt", "States"}`: every state, every transition, reachability."""
    try:
        fields = _StateSetFields.model_validate(dict(raw))
    except ValidationError as exc:
        raise definition_error(exc, state=None) from None
    states = {name: _load_state(name, body) for name, body in fields.states.items()}
    if fields.start_at not in states:
        raise AslDefinitionError(f"StartAt {fields.start_at!r} is not a state")
    for name, state in states.items():
        for target in state.transitions():
            if target not in states:
                raise AslDefinitionError(f"goes to {target!r}, which is not a state", state=name)
    reachable = _reachable(fields.start_at, states)
    for name in states:
        if name not in reachable:
            raise AslDefinitionError("is not reachable from StartAt", state=name)
    return StateSet(start_at=fields.start_at, states=states)


def _load_state(name: str, raw: Any) -> State:
    if not isinstance(raw, dict):
        raise AslDefinitionError("a state must be a JSON object", state=name)
    kind = raw.get("Type")
    if kind == "Parallel":
        raise AslUnsupportedError("Parallel states are not supported by the local engine", state=name)
    if kind not in _STATE_TYPES:
        raise AslDefinitionError(f"unknown state Type {kind!r}", state=name)
    unsupported = sorted(_UNSUPPORTED_FIELDS & set(raw))
    if unsupported:
        raise AslUnsupportedError(f"field {unsupported[0]} is not supported by the local engine", state=name)
    try:
        return _STATE_TYPES[kind].model_validate(raw)
    except ValidationError as exc:
        raise definition_error(exc, state=name) from None


def _reachable(start_at: str, states: Mapping[str, State]) -> set[str]:
    seen = {start_at}
    pending = [start_at]
    while pending:
        for target in states[pending.pop()].transitions():
            if target not in seen:
                seen.add(target)
                pending.append(target)
    return seen
