"""What `GET /v1/overview` answers: an owner's runs of the last days counted by profile, model and day."""

from pydantic import BaseModel, Field

DEFAULT_DAYS = 7
MAX_DAYS = 31
# The newest runs of the window one overview counts: its read stays bounded whatever the traffic.
MAX_RUNS = 2000


class OverviewGroup(BaseModel, defer_build=True):
    """The runs of one profile, model or day (or all of them): how many, how they ended, what they spent."""

    key: str = Field(description="The profile, the model, the day (YYYY-MM-DD, UTC) or `all`.")
    runs: int = 0
    succeeded: int = 0
    failed: int = Field(default=0, description="Runs that ended FAILED or TIMED_OUT (or lost past their deadline).")
    cancelled: int = 0
    open: int = Field(default=0, description="Runs still going (QUEUED, RUNNING or waiting).")
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = Field(default=0.0, description="The cost of the runs whose model has prices.")
    latency_p50_ms: float | None = Field(
        default=None, description="Median time from creation to end of the runs that ended; None when none did."
    )
    latency_p95_ms: float | None = Field(default=None, description="95th percentile of the same times.")


class Overview(BaseModel, defer_build=True):
    """The caller's runs created in the last `days` days (UTC), counted whole and by profile, model and day."""

    days: int
    since: str = Field(description="The start of the window: midnight UTC, `days - 1` days before today.")
    runs_read: int = Field(description="How many runs the counts cover.")
    truncated: bool = Field(
        description="More runs were created in the window than one overview reads: the counts cover the newest."
    )
    totals: OverviewGroup
    by_profile: list[OverviewGroup]
    by_model: list[OverviewGroup] = Field(description="By the model each run's profile names in the configuration.")
    by_day: list[OverviewGroup] = Field(description="Every day of the window, oldest first, days without runs too.")
