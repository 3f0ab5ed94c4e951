"""Secret references in configuration, their resolution, and redaction of resolved values.

A configuration value that holds a credential is one of:

- a literal (``"abc123"``), used as it is;
- ``ssm:/path/to/parameter`` — an SSM Parameter Store parameter, decrypted;
- ``secretsmanager:name`` or ``secretsmanager:name#json-key`` — a Secrets Manager secret, or one key of a
  secret whose value is a JSON object.

`SecretResolver` fetches references through Powertools parameter providers, which cache each value for
``max_age_seconds`` so a rotated secret is picked up without a redeploy. Every value it hands out is
remembered by its `Redactor` (`stepwise.config.redaction`), which scrubs those values, whatever an echo
did to them, from any text before that text reaches a model, the store or a log. Any value is accepted,
however short (local model servers take `ollama` or `x`); one too short to redact inside text is redacted
where it is a whole value, with a warning. Error messages here name the reference, never the value.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from stepwise.config.redaction import Redactor
from stepwise.errors import ConfigError

SSM_PREFIX = "ssm:"
SECRETS_MANAGER_PREFIX = "secretsmanager:"
SecretSource = Literal["literal", "ssm", "secretsmanager"]


class SecretUnavailable(ConfigError):
    """A secret reference could not be resolved; the message names the reference, never a value."""


class ParameterProvider(Protocol):
    """What the resolver needs of a Powertools provider (`SSMProvider`, `SecretsProvider`)."""

    def get(self, name: str, max_age: int | None = None, **kwargs: Any) -> str | bytes | dict[str, Any] | None:
        """Fetch one value, from the provider's cache when it is younger than ``max_age`` seconds."""
        ...


@dataclass(frozen=True)
class SecretReference:
    """A parsed configuration value: where the secret lives, its name there, and an optional JSON key."""

    source: SecretSource
    name: str
    json_key: str | None = None

    @classmethod
    def parse(cls, value: str) -> SecretReference:
        """Read a configuration value; anything without a known prefix is a literal."""
        if value.startswith(SSM_PREFIX):
            name = value.removeprefix(SSM_PREFIX)
            if not name:
                raise ConfigError("secret reference 'ssm:' names no parameter")
            return cls("ssm", name)
        if value.startswith(SECRETS_MANAGER_PREFIX):
            name, _, json_key = value.removeprefix(SECRETS_MANAGER_PREFIX).partition("#")
            if not name:
                raise ConfigError(f"secret reference {value!r} names no secret")
            return cls("secretsmanager", name, json_key or None)
        return cls("literal", value)

    def describe(self) -> str:
        """The reference as written in configuration; safe to show, it holds no secret."""
        if self.source == "ssm":
            return f"{SSM_PREFIX}{self.name}"
        if self.source == "secretsmanager":
            suffix = f"#{self.json_key}" if self.json_key else ""
            return f"{SECRETS_MANAGER_PREFIX}{self.name}{suffix}"
        return "a literal value"


class SecretResolver:
    """Resolves literal, ``ssm:`` and ``secretsmanager:`` values and remembers what it resolved.

    Providers are created with boto3 on first use when not injected, so configurations that hold only
    literals never touch AWS. Powertools caches each fetched value for ``max_age_seconds``.
    """

    def __init__(
        self,
        ssm_provider: ParameterProvider | None = None,
        secrets_provider: ParameterProvider | None = None,
        max_age_seconds: int = 300,
        redactor: Redactor | None = None,
    ) -> None:
        if max_age_seconds < 0:
            raise ValueError("max_age_seconds must be zero or more")
        self._ssm_provider = ssm_provider
        self._secrets_provider = secrets_provider
        self._max_age_seconds = max_age_seconds
        self._lock = threading.Lock()
        self.redactor = redactor if redactor is not None else Redactor()

    def resolve(self, value: str) -> str:
        """Return the secret a configuration value stands for, and remember it for redaction.

        Raises `SecretUnavailable` (naming the reference, not the value) when it cannot be fetched.
        """
        reference = SecretReference.parse(value)
        if reference.source == "ssm":
            secret = self._fetch(self._ssm(), reference, decrypt=True)
        elif reference.source == "secretsmanager":
            secret = self._fetch(self._secrets(), reference)
            if reference.json_key is not None:
                secret = _json_field(secret, reference)
        else:
            secret = reference.name
        self.redactor.add(secret)
        return secret

    def _fetch(self, provider: ParameterProvider, reference: SecretReference, **options: Any) -> str:
        try:
            fetched = provider.get(reference.name, max_age=self._max_age_seconds, **options)
        except Exception as exc:
            # Powertools and botocore messages name the parameter, never its value.
            raise SecretUnavailable(
                f"secret {reference.describe()} could not be resolved: {type(exc).__name__}: {exc}"
            ) from None
        if isinstance(fetched, bytes):
            try:
                fetched = fetched.decode("utf-8")
            except UnicodeDecodeError:
                raise SecretUnavailable(f"secret {reference.describe()} is binary, not text") from None
        if not isinstance(fetched, str) or not fetched:
            raise SecretUnavailable(f"secret {reference.describe()} is empty or not a string")
        return fetched

    def _ssm(self) -> ParameterProvider:
        with self._lock:
            if self._ssm_provider is None:
                from aws_lambda_powertools.utilities.parameters import SSMProvider

                self._ssm_provider = SSMProvider()
            return self._ssm_provider

    def _secrets(self) -> ParameterProvider:
        with self._lock:
            if self._secrets_provider is None:
                from aws_lambda_powertools.utilities.parameters import SecretsProvider

                self._secrets_provider = SecretsProvider()
            return self._secrets_provider


def _json_field(secret: str, reference: SecretReference) -> str:
    try:
        document = json.loads(secret)
    except ValueError:
        # `from None`: the decoding error carries the document, which is the secret.
        raise SecretUnavailable(f"secret {reference.describe()} is not a JSON object") from None
    if not isinstance(document, dict):
        raise SecretUnavailable(f"secret {reference.describe()} is not a JSON object")
    field = document.get(reference.json_key)
    if isinstance(field, bool) or not isinstance(field, str | int | float) or field == "":
        raise SecretUnavailable(f"secret {reference.describe()} has no text value at that key")
    return str(field)
