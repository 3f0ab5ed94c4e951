"""An OpenAPI document whose operations become tools (the `openapi:` list of `stepwise.config.tool_sources`),
and the filters that choose its operations."""

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from stepwise.config.http_api import ApiKeyConfig
from stepwise.config.tool_call_rules import TOOL_MODEL_CONFIG, ApprovalRule, EffectRule
from stepwise.config.tool_limits import (
    DEFAULT_MAX_EXECUTION_MS,
    DEFAULT_MAX_RESPONSE_BYTES,
    MaxExecutionMs,
    MaxResponseBytes,
)
from stepwise.config.url_checks import validated_http_url

# The same cap for a file, an S3 object and a URL: above GitHub's REST description (13 MB), the largest
# public one Stepwise is tested with; the limit keeps a hostile source from exhausting a Lambda's memory.
DEFAULT_MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
MAX_DOCUMENT_BYTES_LIMIT = 256 * 1024 * 1024
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class OperationFilter(BaseModel):
    """OpenAPI operations chosen by tag or by operationId (or, without one, by the generated tool name)."""

    model_config = TOOL_MODEL_CONFIG

    tags: list[str] = Field(default_factory=list)
    operations: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names_something(self) -> "OperationFilter":
        if not self.tags and not self.operations:
            raise ValueError("name at least one tag or operation")
        return self


class OpenApiSourceConfig(ApprovalRule, EffectRule):
    """An OpenAPI 3.0/3.1 document whose operations become tools.

    ``source`` is a file in the config directory, ``s3://bucket/key`` or an ``https://`` URL (``http://``
    only for an ``internal`` source); ``document`` is the document inline (what a Higress ai-agent
    configuration carries). Exactly one of the two is given. ``name`` labels an inline document in
    messages. ``maxDocumentBytes`` caps the document whatever its source. ``onUnsupported`` says what an
    operation the importer cannot offer does: ``skip`` (the default) leaves it out and reports why,
    ``fail`` refuses the whole document.
    """

    model_config = TOOL_MODEL_CONFIG

    source: str | None = Field(default=None, min_length=1)
    document: dict[str, Any] | None = Field(default=None, repr=False)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    base_url: str | None = Field(default=None, alias="baseUrl")
    include: OperationFilter | None = None
    exclude: OperationFilter | None = None
    api_key: ApiKeyConfig | None = Field(default=None, alias="apiKey")
    internal: bool = False
    max_execution_time: MaxExecutionMs = DEFAULT_MAX_EXECUTION_MS
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES
    max_document_bytes: int = Field(
        default=DEFAULT_MAX_DOCUMENT_BYTES, alias="maxDocumentBytes", gt=0, le=MAX_DOCUMENT_BYTES_LIMIT
    )
    on_unsupported: Literal["skip", "fail"] = Field(default="skip", alias="onUnsupported")

    @field_validator("base_url")
    @classmethod
    def _http_base_url(cls, url: str | None) -> str | None:
        return None if url is None else validated_http_url(url, what="baseUrl")

    @model_validator(mode="after")
    def _one_known_source(self) -> "OpenApiSourceConfig":
        if (self.source is None) == (self.document is None):
            raise ValueError("give exactly one of 'source' (a file, s3:// or https:// URL) or 'document' (inline)")
        source = self.source or ""
        if source.startswith("s3://"):
            bucket, _, key = source.removeprefix("s3://").partition("/")
            if not bucket or not key:
                raise ValueError(f"source {source!r} must be s3://bucket/key")
        elif source.startswith("http://") and not self.internal:
            raise ValueError(f"source {source!r}: only an internal source may be fetched over plain http")
        elif source.startswith(("http://", "https://")):
            validated_http_url(source, what="source")
        elif _URL_SCHEME.match(source):
            raise ValueError(f"source {source!r} must be a file in the config directory, s3:// or https://")
        return self

    def describe(self) -> str:
        """The source as configured (a file, an S3 object or a URL), else its name or ``inline document``."""
        return self.source or self.name or "inline document"
