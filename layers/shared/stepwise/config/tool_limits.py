"""The names and limits every tool source shares: a tool's name, a Python module's name, a call's time and
response size. Apart from the sources' models, so that a file naming no HTTP API, OpenAPI document, MCP server
or A2A agent loads none of them (`stepwise.config.tool_sources`)."""

import re
from typing import Annotated

from pydantic import Field

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
PYTHON_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

DEFAULT_MAX_EXECUTION_MS = 5000
MAX_EXECUTION_MS_LIMIT = 60_000
DEFAULT_MAX_RESPONSE_BYTES = 65_536
MAX_RESPONSE_BYTES_LIMIT = 10 * 1024 * 1024

MaxExecutionMs = Annotated[int, Field(alias="maxExecutionTime", gt=0, le=MAX_EXECUTION_MS_LIMIT)]
"""A source's `maxExecutionTime`: how long one call may take, in milliseconds (an HTTP API, an OpenAPI document)."""
MaxResponseBytes = Annotated[int, Field(alias="maxResponseBytes", gt=0, le=MAX_RESPONSE_BYTES_LIMIT)]
"""A source's `maxResponseBytes`: the most of one answer a call reads (every remote tool source)."""
