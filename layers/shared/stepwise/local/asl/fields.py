"""Building blocks of the definition models: the pydantic base, typed fields that compile paths and
templates while validating, Retry and Catch entries, and the translation of pydantic errors."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError
from pydantic.alias_generators import to_pascal

from stepwise.local.asl.choice import parse_timestamp
from stepwise.local.asl.errors import AslDefinitionError, AslUnsupportedError
from stepwise.local.asl.paths import JsonPath, parse_path, parse_reference_path
from stepwise.local.asl.templates import DynamicValue, PayloadTemplate, compile_template, parse_dynamic_value

ROOT_PATH = parse_path("$")


def _optional_path(value: Any) -> JsonPath | None:
    return None if value is None else parse_path(value)


def _optional_reference_path(value: Any) -> JsonPath | None:
    return None if value is None else parse_reference_path(value)


def required_reference_path(value: Any) -> JsonPath:
    """A required reference path (ItemsPath): null is refused."""
    if value is None:
        raise AslDefinitionError("must be a reference path, not null")
    return parse_reference_path(value)


def check_query_language(value: Any) -> str:
    """QueryLanguage: JSONPath is the only one supported."""
    if value == "JSONata":
        raise AslUnsupportedError("QueryLanguage JSONata is not supported; use JSONPath")
    if value != "JSONPath":
        raise AslDefinitionError(f"QueryLanguage must be JSONPath or JSONata, got {value!r}")
    return "JSONPath"


def check_timestamp(value: Any) -> str:
    """A literal Wait `Timestamp`, checked at load time."""
    if parse_timestamp(value) is None:
        raise AslDefinitionError(f"{value!r} is not an RFC 3339 timestamp with a time zone")
    return str(value)


DataPath = Annotated[JsonPath | None, PlainValidator(_optional_path)]
"""InputPath / OutputPath: absent means `$`, null means `{}`."""
ReferencePath = Annotated[JsonPath | None, PlainValidator(_optional_reference_path)]
"""ResultPath and the like: absent means `$`, null means "keep the input"."""
Template = Annotated[PayloadTemplate | None, PlainValidator(compile_template)]
Dynamic = Annotated[DynamicValue | None, PlainValidator(parse_dynamic_value)]


class AslModel(BaseModel):
    """The base of every definition model: ASL field names, no unknown fields, no coercion."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, alias_generator=to_pascal, arbitrary_types_allowed=True
    )


class Retrier(AslModel):
    """One entry of a state's `Retry` list."""

    error_equals: list[str] = Field(min_length=1)
    interval_seconds: int = Field(1, ge=1)
    max_attempts: int = Field(3, ge=0)
    backoff_rate: float = Field(2.0, ge=1.0)
    max_delay_seconds: int | None = Field(None, ge=1)
    jitter_strategy: Literal["FULL", "NONE"] = "NONE"
    comment: str | None = None


class Catcher(AslModel):
    """One entry of a state's `Catch` list."""

    error_equals: list[str] = Field(min_length=1)
    next: str
    result_path: ReferencePath = ROOT_PATH
    comment: str | None = None


def definition_error(exc: ValidationError, *, state: str | None) -> AslDefinitionError:
    """One error naming the state, the field and the reason, from pydantic's list of errors."""
    reasons: list[str] = []
    unsupported = False
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, AslDefinitionError) and cause.state:
            # A state inside a Map's processor: name it by its own path, as the innermost error is precise.
            return type(cause)(cause.reason, state=f"{state}/{cause.state}" if state else cause.state)
        unsupported = unsupported or isinstance(cause, AslUnsupportedError)
        if error["type"] == "extra_forbidden":
            reasons.append(f"unknown field {field!r}")
        elif error["type"] == "missing":
            reasons.append(f"field {field!r} is required")
        else:
            reason = cause.reason if isinstance(cause, AslDefinitionError) else error["msg"]
            reasons.append(f"field {field!r}: {reason}" if field else reason)
    kind = AslUnsupportedError if unsupported else AslDefinitionError
    return kind("; ".join(reasons), state=state)
