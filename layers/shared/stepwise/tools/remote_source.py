"""What the MCP and A2A tool clients share: a remote source's configuration, the resolver of its credential
(whose redactor knows it), the address guards of its requests, and the headers each request carries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from stepwise.config.credentials import SecretResolver, SecretUnavailable
from stepwise.config.redaction import Redactor
from stepwise.errors import ToolError
from stepwise.tools.guards import AddressPolicy, HostResolver, refusal_reason, system_resolver

if TYPE_CHECKING:
    from stepwise.config.http_api import ApiKeyConfig

USER_AGENT = "stepwise-tools/0.1"


class RemoteSourceConfig(Protocol):
    """The part of an MCP server's or A2A agent's configuration the shared client reads."""

    @property
    def api_key(self) -> ApiKeyConfig | None: ...

    @property
    def headers(self) -> dict[str, str]: ...


SourceConfig = TypeVar("SourceConfig", bound=RemoteSourceConfig)


class RemoteSourceClient(Generic[SourceConfig]):
    """The base of a client of one remote source; `source` names it in errors ("MCP server", "A2A agent")."""

    source = "remote source"

    def __init__(
        self,
        config: SourceConfig,
        *,
        secret_resolver: SecretResolver,
        host_resolver: HostResolver = system_resolver,
        address_policy: AddressPolicy = refusal_reason,
    ) -> None:
        self.config = config
        self._secrets = secret_resolver
        self._host_resolver = host_resolver
        self._address_policy = address_policy

    @property
    def redactor(self) -> Redactor:
        """The redactor that knows this source's credential."""
        return self._secrets.redactor

    def _headers(self, *fixed: tuple[str, str]) -> dict[str, str]:
        """The User-Agent, `fixed`, the configured headers and the credential, resolved now (so a rotated
        secret is picked up once its cache expires); `ToolError` when the credential is unavailable."""
        headers = {"User-Agent": USER_AGENT, **dict(fixed), **self.config.headers}
        key = self.config.api_key
        if key is None:
            return headers
        try:
            secret = self._secrets.resolve(key.value)
        except SecretUnavailable as exc:
            raise ToolError(f"the credential of this {self.source} is unavailable: {exc}") from None
        if key.location == "bearer":
            headers["Authorization"] = f"Bearer {secret}"
        elif key.name is not None:
            headers[key.name] = secret
        return headers
