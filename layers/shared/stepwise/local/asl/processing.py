"""Input and output processing helpers: what InputPath, OutputPath and ResultPath do to the data."""

from __future__ import annotations

import json
from typing import Any

from stepwise.local.asl.errors import RuntimeFailure, StatesFailure
from stepwise.local.asl.paths import JsonPath
from stepwise.local.asl.templates import DynamicValue

MAX_PAYLOAD_BYTES = 256 * 1024


def select(path: JsonPath | None, data: Any, context: Any) -> Any:
    """InputPath / OutputPath: a null path gives `{}`."""
    return {} if path is None else path.evaluate(data, context)


def place(path: JsonPath | None, data: Any, result: Any) -> Any:
    """ResultPath: a null path discards the result and keeps the input."""
    return data if path is None else path.assign(data, result)


def dynamic_text(value: DynamicValue, data: Any, context: Any, field: str) -> str:
    """The string an ErrorPath or CausePath gives; `States.Runtime` if it is not a string."""
    text = value.evaluate(data, context)
    if not isinstance(text, str):
        raise RuntimeFailure(f"{field} {value.source!r} must give a string, got {text!r}")
    return text


def check_payload_size(output: Any) -> None:
    """Step Functions refuses state outputs over 256 KiB with `States.DataLimitExceeded`."""
    if len(json.dumps(output).encode("utf-8")) > MAX_PAYLOAD_BYTES:
        raise StatesFailure("States.DataLimitExceeded", f"The state output is larger than {MAX_PAYLOAD_BYTES} bytes")
