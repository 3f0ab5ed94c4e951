"""The one typed "next step" a parsed completion yields: tool calls, a final answer, or a parse error."""

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from stepwise.models.messages import ToolCall

# `defer_build`: a decision is validated by the step that makes one (Parse) or reads one back (Format); the
# other handlers that import this module build no validator for it (a parent model holding one builds its
# schema inside its own).


class ToolCalls(BaseModel, defer_build=True):
    """The model asked for one or more tools; `note` says what the parser had to do to read it."""

    kind: Literal["tool_calls"] = "tool_calls"
    calls: list[ToolCall] = Field(min_length=1)
    thought: str = ""
    note: str = ""


class FinalAnswer(BaseModel, defer_build=True):
    """The model answered; `thought` is any reasoning it wrote before the answer."""

    kind: Literal["final_answer"] = "final_answer"
    text: str
    thought: str = ""


class ParseError(BaseModel, defer_build=True):
    """The completion could not be read; `message` is fit to send back to the model as an observation."""

    kind: Literal["parse_error"] = "parse_error"
    message: str


Decision = Annotated[ToolCalls | FinalAnswer | ParseError, Field(discriminator="kind")]
