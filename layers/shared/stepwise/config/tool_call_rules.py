"""What every tool source may say about its calls: whether each waits for a person's approval, whether it
changes anything outside, and in which header its idempotency key is sent.
"""

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

# Headers the HTTP client or the tool itself owns: a model-chosen value for them could smuggle a second
# request, break the body framing, lift the size cap (compression) or override the routing.
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
        "expect",
        "accept-encoding",
        "proxy-authorization",
        "proxy-connection",
        "cookie",
    }
)

# `defer_build`: a section is validated as part of `StepwiseConfig`, whose schema (built at import) holds
# it; its own validator is built only if something validates it alone.
TOOL_MODEL_CONFIG = ConfigDict(
    extra="forbid", populate_by_name=True, hide_input_in_errors=True, frozen=True, defer_build=True
)

# How long a tool call marked `requires_approval` waits for an answer before it is denied, by default and
# at most: no run lives longer than 3000 s (`max_execution_seconds`), and a wait never outlasts its run.
DEFAULT_APPROVAL_TIMEOUT_SECONDS = 900
MAX_APPROVAL_TIMEOUT_SECONDS = 3000


class ApprovalRule(BaseModel):
    """Whether the calls of a tool source (or one tool) wait for a person's approval before they run."""

    model_config = TOOL_MODEL_CONFIG

    requires_approval: bool = Field(
        default=False,
        alias="requiresApproval",
        description="Each call pauses the run (WAITING_APPROVAL) until POST /v1/runs/{id}/approvals/{call_id}.",
    )
    approval_timeout_seconds: int = Field(
        default=DEFAULT_APPROVAL_TIMEOUT_SECONDS,
        alias="approvalTimeoutSeconds",
        ge=1,
        le=MAX_APPROVAL_TIMEOUT_SECONDS,
        description="Unanswered this long (or past the run's deadline, if sooner), the call is denied.",
    )

    def approval_timeout(self) -> int | None:
        """The wait for approval of each call, or None when calls run without one."""
        return self.approval_timeout_seconds if self.requires_approval else None


DEFAULT_IDEMPOTENCY_HEADER = "Idempotency-Key"
# Methods that change nothing on the server (RFC 9110, 9.2.1): their calls need no record before they are sent.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class IdempotencyKeyConfig(BaseModel):
    """How a tool source's calls carry their idempotency key, and whether the receiver honours it."""

    model_config = TOOL_MODEL_CONFIG

    header: str | None = Field(
        default=DEFAULT_IDEMPOTENCY_HEADER,
        description="The header an HTTP tool sends the key in (the IETF draft's name by default); null sends none.",
    )
    honoured: bool = Field(
        default=False,
        description="The receiver does a repeated key's work once: a call cut short by a crash is sent again "
        "with the same key. Otherwise it is not sent again, and the model is told its outcome is unknown.",
    )

    @field_validator("header")
    @classmethod
    def _sendable_header(cls, header: str | None) -> str | None:
        if header is not None and not HEADER_NAME.fullmatch(header):
            raise ValueError(f"{header!r} is not a valid HTTP header name")
        if header is not None and header.lower() in RESERVED_HEADERS:
            raise ValueError(f"the {header} header is set by the HTTP client")
        return header


class EffectRule(BaseModel):
    """Whether the calls of a tool source change anything outside, and how a repeat can be recognised.

    A call that may change something (`side_effects`) has its start recorded before it is sent, so a
    step resumed after a crash knows it may have happened: it is sent again only to a receiver that
    honours its idempotency key.
    """

    model_config = TOOL_MODEL_CONFIG

    side_effects: bool | None = Field(
        default=None,
        alias="sideEffects",
        description="True: every call may change something; false: none does. By default an HTTP call does "
        "unless its method is GET, HEAD or OPTIONS, and any other tool's call does not.",
    )
    idempotency_key: IdempotencyKeyConfig = Field(default_factory=IdempotencyKeyConfig, alias="idempotencyKey")
