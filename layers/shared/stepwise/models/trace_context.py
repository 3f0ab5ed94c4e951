"""A run's W3C trace context: where each of its steps' spans joins the run's one trace.

Stored on the run's META when the run is created (the `invoke_agent` span's context) and carried in the
state payload's constant-size `run` field, so every step's span, in whatever Lambda or process it runs,
is a descendant of the request that started the run. It is a few dozen bytes and never grows.
"""

from pydantic import BaseModel, ConfigDict, Field

# traceparent: version-trace_id-parent_id-flags, lower-case hex (W3C Trace Context, level 1)
TRACEPARENT_PATTERN = r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"


class TraceContext(BaseModel, defer_build=True):
    """The W3C `traceparent` (and `tracestate`) of the span a run's steps descend from, and its session."""

    model_config = ConfigDict(extra="forbid", strict=True)

    traceparent: str = Field(pattern=TRACEPARENT_PATTERN)
    # W3C caps tracestate at 32 list members; 512 characters is what a propagator must keep at least
    tracestate: str | None = Field(default=None, max_length=512)
    session_id: str | None = Field(default=None, max_length=128)
