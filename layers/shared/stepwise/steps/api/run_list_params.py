"""The query parameters of `GET /v1/runs` beyond status, session and paging: each validated where it is
declared (the route's signature), so a 422 names the parameter and why; then gathered into the store's
`RunFilter`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import AwareDatetime

from stepwise.models.run import StopReason
from stepwise.steps.api.problems import InvalidRequest
from stepwise.store.run_filters import RunFilter

# What a metadata filter looks like: one `key=value` pair, with the limits run metadata is stored under.
METADATA_FILTER_PATTERN = r"^[^=]{1,64}=.{0,512}$"
MAX_SEARCH_CHARS = 200
# The pages of the API's listings (runs, and the calls waiting for approval).
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100

ProfileParam = Annotated[str | None, Query(min_length=1, max_length=128, description="Only runs of this profile.")]
ToolParam = Annotated[
    str | None,
    Query(min_length=1, max_length=128, description="Only runs that called this tool (known once a run ended)."),
]
StopReasonParam = Annotated[StopReason | None, Query(description="Only runs that ended for this reason.")]
CreatedAfterParam = Annotated[
    AwareDatetime | None, Query(description="Only runs created at or after this time (ISO 8601 with its offset).")
]
CreatedBeforeParam = Annotated[
    AwareDatetime | None, Query(description="Only runs created before this time (ISO 8601 with its offset).")
]
MetadataParam = Annotated[
    str | None,
    Query(pattern=METADATA_FILTER_PATTERN, description="Only runs stored with this metadata pair, as `key=value`."),
]
SearchParam = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=MAX_SEARCH_CHARS,
        description="Words that must each appear, in any case, in the question's first 200 characters or the "
        "answer. Runs are searched newest first within a read budget per request (see `searched_until`).",
    ),
]


def run_filter(
    *,
    profile: str | None = None,
    tool: str | None = None,
    stop_reason: StopReason | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    metadata: str | None = None,
    q: str | None = None,
) -> RunFilter:
    """The store's filter for the validated parameters (a blank `q` searches nothing).

    A time range that holds no moment (`created_after` not before `created_before`) is refused: it is a
    mistake (the two swapped), and answering it with an empty page would read as "no such runs"."""
    if created_after is not None and created_before is not None and created_after >= created_before:
        raise InvalidRequest.of(
            "created_after (query parameter)",
            f"{created_after.isoformat()} is not before created_before ({created_before.isoformat()}): "
            "no run can be created in that range",
        )
    pair = tuple(metadata.split("=", 1)) if metadata is not None else None
    return RunFilter(
        profile=profile,
        tool=tool,
        stop_reason=stop_reason,
        created_after=_stored(created_after),
        created_before=_stored(created_before),
        metadata=pair,
        text=q if q is not None and q.strip() else None,
    )


def _stored(moment: datetime | None) -> str | None:
    """A time as run creation times are stored (UTC, milliseconds, `Z`), to compare with them."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
