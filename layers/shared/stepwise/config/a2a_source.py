"""Configuration of a remote A2A agent as a tool source: where its Agent Card is, how it is called, what is offered.

```yaml
a2a:
  - url: https://agent.example.com       # the agent's base URL; its card is at /.well-known/agent-card.json
    cardPath: /agents/research/card.json # when the card is elsewhere on that origin (optional)
    name: researcher                     # the tool's name (default: the card's name, made model-safe)
    apiKey: {in: bearer, value: "ssm:/stepwise/agent-token"}
    headers: {X-Tenant: acme}            # plain headers, not secrets (they are not redacted)
    timeoutSeconds: 30                   # the whole call: sending the message and following its task
    skills: false                        # true: one tool per skill of the card, named <name>_<skill id>
```
"""

import re

from pydantic import Field, field_validator, model_validator

from stepwise.config.http_api import (
    DEFAULT_MAX_RESPONSE_BYTES,
    TOOL_NAME_PATTERN,
    ApiKeyConfig,
    MaxResponseBytes,
)
from stepwise.config.remote_headers import checked_remote_headers, key_outside_url
from stepwise.config.tool_call_rules import TOOL_MODEL_CONFIG, ApprovalRule, EffectRule
from stepwise.config.url_checks import validated_http_url

DEFAULT_A2A_TIMEOUT_SECONDS = 30.0
# The tool invoker holds every call to 60 s (`stepwise.tools.invoker`): this bound, and the 2 s a task that
# outlived it is given to be canceled, stay within it, so the observation says where the task stood.
MAX_A2A_TIMEOUT_SECONDS = 55.0
DEFAULT_CARD_PATH = "/.well-known/agent-card.json"
MAX_DESCRIPTION_CHARS = 1024
# A name with skills leaves room for the skill's id within a tool name's 64 characters.
AGENT_NAME_WITH_SKILLS_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"
_CARD_PATH = re.compile(r"^/[A-Za-z0-9._~/-]*$")


class A2aAgentConfig(ApprovalRule, EffectRule):
    """A remote agent spoken to over A2A; its Agent Card is read at cold start.

    ``name`` is the tool's name (or, with ``skills``, the prefix of each skill's tool); without it the
    card's name is used, made model-safe. With a ``name``, an agent whose card cannot be read at cold start
    is still offered (described by ``description``), and each call tries the card again, so an agent that
    is down is an observation rather than a configuration error. ``headers`` are sent as they are (not
    secrets: they are not redacted); a credential goes in ``apiKey`` (``in: header`` or ``in: bearer``).
    """

    model_config = TOOL_MODEL_CONFIG

    url: str
    card_path: str = Field(default=DEFAULT_CARD_PATH, alias="cardPath")
    name: str | None = Field(default=None, pattern=TOOL_NAME_PATTERN)
    description: str | None = Field(default=None, min_length=1, max_length=MAX_DESCRIPTION_CHARS)
    skills: bool = False
    headers: dict[str, str] = Field(default_factory=dict)
    api_key: ApiKeyConfig | None = Field(default=None, alias="apiKey")
    internal: bool = False
    timeout_seconds: float = Field(
        default=DEFAULT_A2A_TIMEOUT_SECONDS, alias="timeoutSeconds", gt=0, le=MAX_A2A_TIMEOUT_SECONDS
    )
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        return validated_http_url(url)

    @field_validator("card_path")
    @classmethod
    def _path_on_the_origin(cls, path: str) -> str:
        # A path, never a URL: the card is read from the agent's own origin, where its credential goes.
        if not _CARD_PATH.fullmatch(path) or "/../" in f"{path}/" or "/./" in f"{path}/":
            raise ValueError(f"cardPath {path!r} must be a path on the agent's origin, such as /agent/card.json")
        return path

    @field_validator("headers")
    @classmethod
    def _plain_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return checked_remote_headers(headers, client="A2A", client_owns=lambda name: name == "a2a-version")

    @field_validator("api_key")
    @classmethod
    def _key_not_in_url(cls, key: ApiKeyConfig | None) -> ApiKeyConfig | None:
        return key_outside_url(key, source="an A2A agent")

    @model_validator(mode="after")
    def _prefix_fits(self) -> "A2aAgentConfig":
        if self.skills and self.name is not None and not re.fullmatch(AGENT_NAME_WITH_SKILLS_PATTERN, self.name):
            raise ValueError("name: with skills: true it prefixes each skill's tool, so at most 32 characters")
        return self

    def describe(self) -> str:
        """The agent as configured: its base URL."""
        return self.url

    def card_url(self) -> str:
        """Where the Agent Card is read."""
        return f"{self.url}{self.card_path}"
