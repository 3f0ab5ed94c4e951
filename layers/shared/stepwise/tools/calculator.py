"""Safe arithmetic for the ``calculator`` tool: a small evaluator over Python's `ast`, never `eval`.

Allowed: int and float literals, ``+ - * / // % **``, unary ``-`` and ``+``, parentheses, the
constants ``pi`` and ``e``, and the functions in `FUNCTIONS`. Anything else — other names, attributes,
subscripts, strings, comparisons, calls to anything not listed — is refused before evaluation. Sizes
are bounded so that a model cannot make the tool spin: the expression's length and node count, the
bit length of every intermediate integer, and powers are estimated before they are computed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from stepwise.errors import ToolError

MAX_EXPRESSION_CHARS = 500
MAX_NODES = 200
MAX_INTEGER_BITS = 4096
MAX_ROUND_DIGITS = 15

Number = int | float


def _round(value: Number, digits: Number = 0) -> Number:
    # Rounding an int to -N digits computes 10**N, so N is kept small.
    if not isinstance(digits, int) or abs(digits) > MAX_ROUND_DIGITS:
        raise ToolError(f"round() takes whole digits from -{MAX_ROUND_DIGITS} to {MAX_ROUND_DIGITS}")
    return round(value, digits)


CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "floor": math.floor,
    "ceil": math.ceil,
}
_BINARY_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY_OPERATORS: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def evaluate_arithmetic(expression: str) -> Number:
    """Evaluate an arithmetic expression; `ToolError` says why one is refused or fails."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ToolError("expression is not valid arithmetic") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ToolError(f"expression has more than {MAX_NODES} parts")
    try:
        result = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except OverflowError:
        raise ToolError("result is too large") from None
    except (ValueError, TypeError) as exc:
        raise ToolError(f"cannot compute: {exc}") from None
    return result


def format_number(value: Number) -> str:
    """Show a result the way a person would write it: ``0.3`` rather than ``0.30000000000000004``."""
    if isinstance(value, int):
        return str(value)
    return format(value, ".15g")


def _evaluate(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ToolError(f"only numbers are allowed, not {node.value!r}")
        return _checked(node.value)
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise ToolError(f"unknown name {node.id!r}; allowed constants: {', '.join(CONSTANTS)}")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY_OPERATORS:
        return _checked(_UNARY_OPERATORS[type(node.op)](_evaluate(node.operand)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _checked(_BINARY_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        return _call(node)
    raise ToolError(f"{type(node).__name__} is not allowed in arithmetic")


def _call(node: ast.Call) -> Number:
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
        shown = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
        raise ToolError(f"function {shown!r} is not allowed; allowed: {', '.join(FUNCTIONS)}")
    if node.keywords:
        raise ToolError("functions take positional arguments only")
    arguments = [_evaluate(argument) for argument in node.args]
    return _checked(FUNCTIONS[node.func.id](*arguments))


def _check_power(base: Number, exponent: Number) -> None:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        # The result has about exponent * bits(base) bits; refuse before Python starts computing it.
        if exponent * (abs(base).bit_length() - 1) > MAX_INTEGER_BITS:
            raise ToolError(f"result is too large (more than {MAX_INTEGER_BITS} bits)")
    elif base < 0 and not float(exponent).is_integer():
        raise ToolError("result is not a real number")


def _checked(value: object) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError("result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_INTEGER_BITS:
        raise ToolError(f"result is too large (more than {MAX_INTEGER_BITS} bits)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("result is too large")
    return value
