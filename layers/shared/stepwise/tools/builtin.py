"""The built-in tools a profile can enable by name under ``builtin:``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from stepwise.errors import ToolError
from stepwise.tools.calculator import evaluate_arithmetic, format_number
from stepwise.tools.function_tool import FunctionTool, tool

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def builtin_tools(*, clock: Clock = utc_now) -> dict[str, FunctionTool]:
    """Every built-in tool by name; ``clock`` is what ``current_time`` reads (tests pass a fixed one)."""

    @tool
    def current_time(timezone: str = "UTC") -> dict[str, str]:
        """Get the current date and time in a time zone.

        Args:
            timezone: An IANA time zone name such as "Europe/Paris" or "America/New_York".
        """
        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            # OSError: a name such as "America" is a directory of the zone database, not a zone.
            raise ToolError(f"unknown time zone {timezone!r}; use an IANA name such as 'Europe/Paris'") from None
        now = clock().astimezone(zone)
        return {
            "timezone": timezone,
            "datetime": now.isoformat(timespec="seconds"),
            "weekday": now.strftime("%A"),
        }

    @tool
    def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression exactly and return the number.

        Args:
            expression: Numbers with + - * / // % ** and parentheses, the constants pi and e, and the
                functions abs, round, min, max, sqrt, exp, log, log10, log2, sin, cos, tan, asin,
                acos, atan, floor and ceil. For example "(2 + 3) * sqrt(16)".
        """
        return format_number(evaluate_arithmetic(expression))

    return {each.spec.name: each for each in (current_time, calculator)}
